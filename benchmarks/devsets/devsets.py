"""Load, validate and split the dev sets in ``benchmarks/devsets/<corpus>/{tune,test}.jsonl``.

Pure Python (no third-party imports) so the eval harness, the tests and a Pyodide run can
all read the sets the same way. One JSON object per line:

    {"question", "kind", "expect_pages"?, "history"?, "page"?, "context"?, "lang", "source"}

``python benchmarks/devsets/devsets.py check SITE_DIR SET_DIR`` validates a set against a
built site (every gold page must exist as ``SITE_DIR/<url>index.html``).
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SPLITS = ("tune", "test")

ANSWERABLE = "answerable"
NEAR_MISS = "near_miss"
UNRELATED = "unrelated"
FOLLOWUP_ELLIPTICAL = "followup_elliptical"
FOLLOWUP_UNRELATED = "followup_unrelated"
AFTER_REFUSAL = "after_refusal"
KINDS = (ANSWERABLE, NEAR_MISS, UNRELATED, FOLLOWUP_ELLIPTICAL, FOLLOWUP_UNRELATED, AFTER_REFUSAL)
# Kinds whose gold is "answer with these pages"; the others expect a refusal.
ANSWER_KINDS = frozenset({ANSWERABLE, FOLLOWUP_ELLIPTICAL})
# Kinds that carry an earlier turn, and the kind that earlier turn must have.
HISTORY_KINDS = {
    FOLLOWUP_ELLIPTICAL: ANSWERABLE,
    FOLLOWUP_UNRELATED: ANSWERABLE,
    AFTER_REFUSAL: "refusal",
}
# An after_refusal follow-up may itself be covered (expect_pages) or not (refuse).
OPTIONAL_PAGES_KINDS = frozenset({AFTER_REFUSAL})
FIELDS = frozenset(
    {"question", "kind", "expect_pages", "history", "page", "context", "lang", "source"}
)
HISTORY_FIELDS = frozenset({"question", "kind", "markdown"})


class DevsetError(ValueError):
    """A dev-set line that breaks the format; the message names file, line and field."""


@dataclass(frozen=True)
class Turn:
    """One earlier turn of a conversation, as the reader's widget would send it back."""

    question: str
    kind: str  # "answer" or "refusal"
    markdown: str


@dataclass(frozen=True)
class Item:
    """One dev-set question with its gold outcome."""

    question: str
    kind: str
    lang: str
    source: str
    expect_pages: tuple[str, ...] = ()
    history: tuple[Turn, ...] = ()
    page: str | None = None
    context: str | None = None

    @property
    def expects_answer(self) -> bool:
        """True when the gold outcome is an answer citing one of ``expect_pages``."""
        return bool(self.expect_pages)

    def to_json(self) -> dict[str, Any]:
        """The line's JSON object, fields in the documented order, optional ones omitted."""
        out: dict[str, Any] = {"question": self.question, "kind": self.kind}
        if self.expect_pages:
            out["expect_pages"] = list(self.expect_pages)
        if self.history:
            out["history"] = [
                {"question": t.question, "kind": t.kind, "markdown": t.markdown}
                for t in self.history
            ]
        if self.page is not None:
            out["page"] = self.page
        if self.context is not None:
            out["context"] = self.context
        out["lang"] = self.lang
        out["source"] = self.source
        return out


def _fail(where: str, message: str) -> DevsetError:
    return DevsetError(f"{where}: {message}")


def _text(raw: dict[str, Any], key: str, where: str, required: bool = True) -> str | None:
    value = raw.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise _fail(where, f"field {key!r} must be a non-empty string, got {value!r}")
    return value


def _page_url(url: Any, where: str, field: str) -> str:
    # Page URLs are relative to the site root exactly as mkdocs writes them: "" for the home
    # page, otherwise a path ending in "/" (use_directory_urls).
    if not isinstance(url, str) or url.startswith("/") or (url and not url.endswith("/")):
        raise _fail(where, f"{field} entry {url!r} must be a site-relative URL ending in '/'")
    return url


def parse_item(raw: Any, where: str) -> Item:
    """Check one decoded line and return it as an ``Item``; raise ``DevsetError`` if bad."""
    if not isinstance(raw, dict):
        raise _fail(where, "each line must be a JSON object")
    unknown = set(raw) - FIELDS
    if unknown:
        raise _fail(where, f"unknown field(s) {sorted(unknown)}")
    question = _text(raw, "question", where)
    kind = _text(raw, "kind", where)
    assert question is not None and kind is not None
    if kind not in KINDS:
        raise _fail(where, f"field 'kind' is {kind!r}, expected one of {list(KINDS)}")
    lang = _text(raw, "lang", where)
    source = _text(raw, "source", where)
    assert lang is not None and source is not None
    if not (source == "written" or source.startswith("https://")):
        raise _fail(where, f"field 'source' must be a thread URL or 'written', got {source!r}")
    pages_raw = raw.get("expect_pages", [])
    if not isinstance(pages_raw, list):
        raise _fail(where, "field 'expect_pages' must be a list")
    pages = tuple(_page_url(u, where, "expect_pages") for u in pages_raw)
    if kind in ANSWER_KINDS and not pages:
        raise _fail(where, f"kind {kind!r} needs at least one expect_pages entry")
    if kind not in ANSWER_KINDS and kind not in OPTIONAL_PAGES_KINDS and pages:
        raise _fail(where, f"kind {kind!r} expects a refusal, so expect_pages must be empty")
    history_raw = raw.get("history", [])
    if not isinstance(history_raw, list):
        raise _fail(where, "field 'history' must be a list")
    history = []
    for n, turn in enumerate(history_raw):
        at = f"{where} history[{n}]"
        if not isinstance(turn, dict) or set(turn) != HISTORY_FIELDS:
            raise _fail(at, f"must be an object with exactly {sorted(HISTORY_FIELDS)}")
        t_question, t_kind = _text(turn, "question", at), _text(turn, "kind", at)
        t_markdown = _text(turn, "markdown", at)
        assert t_question is not None and t_kind is not None and t_markdown is not None
        if t_kind not in ("answer", "refusal"):
            raise _fail(at, f"field 'kind' is {t_kind!r}, expected 'answer' or 'refusal'")
        history.append(Turn(t_question, t_kind, t_markdown))
    if kind in HISTORY_KINDS:
        if not history:
            raise _fail(where, f"kind {kind!r} needs a history with the earlier turn")
        wanted = "answer" if HISTORY_KINDS[kind] == ANSWERABLE else "refusal"
        if history[-1].kind != wanted:
            raise _fail(where, f"kind {kind!r} needs its last history turn to be {wanted!r}")
    elif history:
        raise _fail(where, f"kind {kind!r} is a first turn, so history must be empty")
    page = raw.get("page")
    if page is not None:
        page = _page_url(page, where, "page")
    context = _text(raw, "context", where, required=False)
    return Item(question, kind, lang, source, pages, tuple(history), page, context)


def read_jsonl(path: Path) -> list[Item]:
    """All items of one JSONL file, each line validated."""
    items = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        where = f"{path}:{number}"
        if not line.strip():
            raise _fail(where, "blank line")
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            raise _fail(where, f"not valid JSON ({exc.msg})") from None
        items.append(parse_item(raw, where))
    return items


def load(name_or_dir: str | Path, split: str) -> list[Item]:
    """The ``split`` half ("tune" or "test") of a set, by corpus name or directory."""
    if split not in SPLITS:
        raise DevsetError(f"split is {split!r}, expected one of {list(SPLITS)}")
    # A bare name is a set beside this module; anything else is a directory path.
    named = HERE / str(name_or_dir)
    directory = named if named.is_dir() else Path(name_or_dir)
    return read_jsonl(directory / f"{split}.jsonl")


def corpora() -> list[str]:
    """Names of the sets that live beside this module."""
    return sorted(p.name for p in HERE.iterdir() if (p / "tune.jsonl").is_file())


def missing_pages(items: Iterable[Item], site_dir: Path) -> list[str]:
    """Gold and current-page URLs with no ``index.html`` in the built site."""
    urls: set[str] = set()
    for item in items:
        urls.update(item.expect_pages)
        if item.page is not None:
            urls.add(item.page)
    return sorted(u for u in urls if not (site_dir / u / "index.html").is_file())


def normalised(question: str) -> str:
    """The form used to compare questions for duplicates and for the split hash."""
    return " ".join(question.casefold().split())


def split_key(item: Item) -> str:
    """A stable hash of the question: the split must not depend on file order."""
    return hashlib.sha256(normalised(item.question).encode("utf-8")).hexdigest()


def split(items: Sequence[Item]) -> tuple[list[Item], list[Item]]:
    """Deterministic tune/test halves, stratified by kind, one half per question text.

    Within each kind (in ``KINDS`` order), items are ordered by the sha256 of their
    normalised question and dealt alternately, tune first, so every kind is split as evenly
    as its count allows and the result depends on the set's content, never on file order.
    A question already placed under an earlier kind (the same near-miss asked alone and
    again after a covered turn) goes to that same half, so no text is in both halves.
    Adding questions later can move others: a set's halves are fixed when it is made, and
    ``check`` holds the files to it.
    """
    placed: dict[str, str] = {}
    halves: dict[str, list[Item]] = {name: [] for name in SPLITS}
    for kind in KINDS:
        dealt = 0
        for item in sorted((i for i in items if i.kind == kind), key=split_key):
            text = normalised(item.question)
            if text not in placed:
                placed[text] = SPLITS[dealt % 2]
                dealt += 1
            halves[placed[text]].append(item)
    return halves["tune"], halves["test"]


def write_split(items: Sequence[Item], directory: Path) -> None:
    """Write ``tune.jsonl`` and ``test.jsonl`` for ``items`` into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, half in zip(SPLITS, split(items), strict=True):
        lines = [json.dumps(i.to_json(), ensure_ascii=False) for i in half]
        (directory / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def check(site_dir: Path, directory: Path) -> list[str]:
    """Every problem with the set in ``directory`` against ``site_dir``; empty if none."""
    problems: list[str] = []
    halves = {name: load(directory, name) for name in SPLITS}
    seen: dict[str, str] = {}
    for name, items in halves.items():
        for item in items:
            key = normalised(item.question)
            if item.history:
                key += " | " + normalised(item.history[-1].question)
            if key in seen:
                problems.append(f"{directory}: {item.question!r} in {name} and {seen[key]}")
            seen[key] = name
    everything = halves["tune"] + halves["test"]
    for url in missing_pages(everything, site_dir):
        problems.append(f"{directory}: page {url!r} is not in the built site {site_dir}")
    for name, half in zip(SPLITS, split(everything), strict=True):
        if [split_key(i) for i in half] != [split_key(i) for i in halves[name]]:
            problems.append(
                f"{directory}: {name}.jsonl is not the stratified sha256 split "
                "of the set (write it with write_split)"
            )
    return problems


def counts(items: Iterable[Item]) -> dict[str, int]:
    """Number of items per kind, in ``KINDS`` order."""
    tally = dict.fromkeys(KINDS, 0)
    for item in items:
        tally[item.kind] += 1
    return tally


def main(argv: Sequence[str]) -> int:
    """``check SITE_DIR SET_DIR`` or ``counts SET_DIR``; prints problems or a table."""
    if len(argv) == 3 and argv[0] == "check":
        problems = check(Path(argv[1]), Path(argv[2]))
        for problem in problems:
            print(problem)
        return 1 if problems else 0
    if len(argv) == 2 and argv[0] == "counts":
        for name in SPLITS:
            print(name, counts(load(argv[1], name)))
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
