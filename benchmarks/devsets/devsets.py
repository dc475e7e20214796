"""Load, validate and split the dev sets in ``benchmarks/devsets/<corpus>/{tune,test}.jsonl``.

The line format is `docpilot eval`'s question set, and its one parser is
``docpilot_runtime.evaluate.run.parse_question``: every line is read there. This module adds
the dev sets' own policy on top (every line says its ``lang`` and its ``source``, a thread
URL or "written"; page URLs are site-relative, as mkdocs writes them; a history turn has
exactly ``question``, ``kind`` and ``markdown``), and the tune/test split.

``python benchmarks/devsets/devsets.py check SITE_DIR SET_DIR`` validates a set against a
built site (every gold page must exist as ``SITE_DIR/<url>index.html``); a follow-up set,
``followups/<corpus>/``, is checked the same way against its corpus's site.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from docpilot_runtime.evaluate.questions import KINDS, EvalError, EvalQuestion, parse_question

HERE = Path(__file__).resolve().parent
SPLITS = ("tune", "test")

ANSWERABLE = "answerable"
Item = EvalQuestion  # one dev-set question with its gold outcome
DevsetError = EvalError  # a line that breaks the format; names file, line and field
HISTORY_FIELDS = frozenset({"question", "kind", "markdown"})

__all__ = ["ANSWERABLE", "KINDS", "DevsetError", "Item", "load", "parse_item", "read_jsonl"]


def _fail(where: str, message: str) -> DevsetError:
    return DevsetError(f"{where}: {message}")


def _site_relative(url: Any, where: str, field: str) -> None:
    # Page URLs are relative to the site root exactly as mkdocs writes them: "" for the home
    # page, otherwise a path ending in "/" (use_directory_urls).
    if not isinstance(url, str) or url.startswith("/") or (url and not url.endswith("/")):
        raise _fail(where, f"{field} entry {url!r} must be a site-relative URL ending in '/'")


def parse_item(raw: Any, where: str) -> Item:
    """Check one decoded line (the format, then the dev sets' policy); raise DevsetError."""
    item = parse_question(raw, where)
    for key in ("lang", "source"):
        value = raw.get(key)
        if not isinstance(value, str) or not value.strip():
            raise _fail(where, f"field {key!r} must be a non-empty string, got {value!r}")
    if not (item.source == "written" or item.source.startswith("https://")):
        raise _fail(where, f"field 'source' must be a thread URL or 'written', got {item.source!r}")
    for url in raw.get("expect_pages", []):
        _site_relative(url, where, "expect_pages")
    if raw.get("page") is not None:
        _site_relative(raw["page"], where, "page")
    for n, turn in enumerate(raw.get("history", [])):
        if set(turn) != HISTORY_FIELDS or not str(turn.get("markdown", "")).strip():
            raise _fail(f"{where} history[{n}]", f"must be an object with exactly "
                        f"{sorted(HISTORY_FIELDS)}, each non-empty")
    if "context" in raw and not raw["context"].strip():
        raise _fail(where, "field 'context' must be a non-empty string when present")
    return item


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


# Sets in which every question was taken from a public thread (issue 23), not written: each
# line's source is that thread's URL. They hold the first-turn kinds in both halves (follow-ups
# only where a thread had a real one; no after_refusal, no thread holds one) and no thread has
# questions in both halves.
THREAD_SETS = ("textual", "netbox", "hatch", "traefik", "headscale", "1panel")
THREAD_URL = re.compile(r"https://github\.com/[\w.-]+/[\w.-]+/(issues|pull|discussions)/\d+")
FIRST_TURN_KINDS = ("answerable", "near_miss", "unrelated")
MULTILINGUAL = HERE / "multilingual"


def threads_in_both_halves(tune: Iterable[Item], test: Iterable[Item]) -> list[str]:
    """Thread URLs with questions in both halves (a real set is split by thread)."""
    return sorted({i.source for i in tune} & {i.source for i in test} - {"written"})


FOLLOWUPS = HERE / "followups"
FOLLOWUP_KINDS = ("followup_elliptical", "followup_unrelated")


def followup_sets() -> list[str]:
    """Corpora with a follow-up set in ``followups/<corpus>/`` (follow-ups only, most in
    languages other than the corpus's, split by the same rule, reported on their own)."""
    return sorted(p.name for p in FOLLOWUPS.iterdir() if (p / "tune.jsonl").is_file())


def thread_source_problems(items: Iterable[Item]) -> list[str]:
    """Questions of a thread set whose ``source`` is not a GitHub thread URL."""
    return [f"{i.question[:60]!r}: source {i.source!r}" for i in items
            if not THREAD_URL.fullmatch(i.source)]


def multilingual_sets() -> list[str]:
    """Corpora with real non-English questions in ``multilingual/<corpus>/`` (issue 23 point 4)."""
    return sorted(p.name for p in MULTILINGUAL.iterdir() if (p / "tune.jsonl").is_file())


TRANSLATED = HERE / "translated"


def translated_sets() -> list[str]:
    """Corpora with questions of their real sets translated by us into other languages
    (``translated/<corpus>/``, issue 23 point 4): written, reported apart, never pooled."""
    return sorted(p.name for p in TRANSLATED.iterdir() if (p / "tune.jsonl").is_file())


def translation_problems(site_dir: Path, corpus: str) -> list[str]:
    """Every problem with ``translated/<corpus>/``: each line translates a question of the
    corpus's real set, so its ``source`` is a thread of the *same half* of that set (a
    translation never crosses halves), its kind is that question's kind, its pages exist
    in the built site, and its language is not English."""
    problems = []
    for split in SPLITS:
        kinds: dict[str, set[str]] = {}
        for original in load(corpus, split):
            kinds.setdefault(original.source, set()).add(original.kind)
        for item in load(TRANSLATED / corpus, split):
            where = f"translated/{corpus}/{split}.jsonl: {item.question[:50]!r}"
            if item.source not in kinds:
                problems.append(f"{where}: source {item.source} is not a thread of {split}")
            elif item.kind not in kinds[item.source]:
                problems.append(f"{where}: kind {item.kind}, the thread's are {kinds[item.source]}")
            if item.lang == "en":
                problems.append(f"{where}: a translation must not be English")
        problems += [
            f"translated/{corpus}: page {url!r} is not in the built site"
            for url in missing_pages(load(TRANSLATED / corpus, split), site_dir)
        ]
    return problems


def missing_pages(items: Iterable[Item], site_dir: Path) -> list[str]:
    """Gold and current-page URLs (site-relative) with no ``index.html`` in the built site."""
    urls: set[str] = set()
    for item in items:
        urls.update(p.lstrip("/") for p in item.expect_pages)
        if item.page is not None:
            urls.add(item.page.lstrip("/"))
    return sorted(u for u in urls if not (site_dir / u / "index.html").is_file())


def normalised(question: str) -> str:
    """The form used to compare questions for duplicates and for the split hash."""
    return " ".join(question.casefold().split())


def split_key(item: Item) -> str:
    """A stable hash of the question: the split must not depend on file order."""
    return hashlib.sha256(normalised(item.question).encode("utf-8")).hexdigest()


def split(items: Sequence[Item], by_thread: bool = False) -> tuple[list[Item], list[Item]]:
    """Deterministic tune/test halves, stratified by kind, one half per question text.

    Within each kind (in ``KINDS`` order), items are ordered by the sha256 of their
    normalised question and dealt alternately, tune first, so every kind is split as evenly
    as its count allows and the result depends on the set's content, never on file order.
    A question already placed under an earlier kind (the same near-miss asked alone and
    again after a covered turn) goes to that same half, so no text is in both halves; with
    ``by_thread`` (the sets made from threads) so does every question of a thread already
    placed (a thread's follow-up stays with its first question). Adding questions later
    can move others: a set's halves are fixed when it is made, and ``check`` holds the
    files to it.
    """
    placed: dict[str, str] = {}
    halves: dict[str, list[Item]] = {name: [] for name in SPLITS}
    for kind in KINDS:
        dealt = 0
        for item in sorted((i for i in items if i.kind == kind), key=split_key):
            keys = [normalised(item.question)]
            if by_thread and THREAD_URL.fullmatch(item.source):
                keys.append(item.source)
            half = next((placed[k] for k in keys if k in placed), None)
            if half is None:
                half = SPLITS[dealt % 2]
                dealt += 1
            for key in keys:
                placed.setdefault(key, half)
            halves[half].append(item)
    return halves["tune"], halves["test"]


def splits_by_thread(directory: Path) -> bool:
    """Whether a set's folder is split by thread (the sets made from threads)."""
    return directory.name in THREAD_SETS or directory.parent.name == "multilingual"


def write_split(items: Sequence[Item], directory: Path) -> None:
    """Write ``tune.jsonl`` and ``test.jsonl`` for ``items`` into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, half in zip(SPLITS, split(items, splits_by_thread(directory)), strict=True):
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
    for name, half in zip(SPLITS, split(everything, splits_by_thread(directory)), strict=True):
        if [split_key(i) for i in half] != [split_key(i) for i in halves[name]]:
            problems.append(
                f"{directory}: {name}.jsonl is not the stratified sha256 split "
                "of the set (write it with write_split)"
            )
    if directory.name in THREAD_SETS:
        for url in threads_in_both_halves(halves["tune"], halves["test"]):
            problems.append(f"{directory}: thread {url} has questions in both halves")
        for item in everything:
            if not THREAD_URL.fullmatch(item.source):
                problems.append(f"{directory}: {item.question!r} has source {item.source!r}, "
                                "not a GitHub issue, pull request or discussion URL")
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
