"""`docpilot eval`: how well a built site's bundle answers and refuses a question set.

A question set is JSON lines, one question an object:

    {"question": str, "kind": KIND, "expect_pages"?: [page url, ...],
     "history"?: [{"question", "kind", "markdown"?}, ...], "page"?: str,
     "context"?: str, "lang"?: str, "source"?: str}

``kind`` says what the question tests: ``answerable`` (the docs answer it), ``near_miss``
(close to a covered topic, but the docs are silent), ``unrelated`` (off-topic),
``followup_elliptical`` (needs the earlier turn in ``history`` to stand alone),
``followup_unrelated`` (an uncovered question after a covered turn) and ``after_refusal``
(asked after a refused turn). A question should be answered exactly when it lists
``expect_pages`` (page URLs as the site serves them, "reference/cli/" or "/reference/cli/",
"" for the home page; any one counts as a hit). ``context`` is text a reader pasted under
the question (error output, code); it is sent only with ``with_context``.

Each question is one real turn through `Runtime.ask`, with no model (so the gate and the
retrieval are measured, not a model's wording): "answered" means the turn was not a
refusal. Page recall@k reads the distinct pages of the result's ``ranked`` units.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from docpilot_runtime.shared.types import AskRequest, HistoryItem

if TYPE_CHECKING:
    pass

EvalMode = Literal["bundle", "lexical"]

KINDS = (
    "answerable",
    "near_miss",
    "unrelated",
    "followup_elliptical",
    "followup_unrelated",
    "after_refusal",
)
_FIELDS = {"question", "kind", "expect_pages", "history", "page", "context", "lang", "source"}


class EvalError(ValueError):
    """A question file that cannot be used; the message names the file, line and field."""


@dataclass(frozen=True)
class EvalQuestion:
    question: str
    kind: str
    expect_pages: tuple[str, ...] = ()
    history: tuple[HistoryItem, ...] = ()
    page: str | None = None
    context: str = ""
    lang: str = "en"
    source: str = ""

    @property
    def should_answer(self) -> bool:
        return bool(self.expect_pages)

    def to_json(self) -> dict[str, Any]:
        """The line's JSON object, fields in the documented order, optional ones omitted
        (page URLs site-relative, as the files spell them)."""
        out: dict[str, Any] = {"question": self.question, "kind": self.kind}
        if self.expect_pages:
            out["expect_pages"] = [p.lstrip("/") for p in self.expect_pages]
        if self.history:
            out["history"] = [
                {"question": t.question, "kind": t.kind, "markdown": t.markdown}
                for t in self.history
            ]
        if self.page is not None:
            out["page"] = self.page
        if self.context:
            out["context"] = self.context
        out["lang"] = self.lang
        if self.source:
            out["source"] = self.source
        return out

    def request(self, with_context: bool = False) -> AskRequest:
        text = self.question
        if with_context and self.context:
            text = f"{text}\n\n{self.context}"
        return AskRequest(question=text, history=self.history, page=self.page)


def page_path_of(url: str) -> str:
    """A page URL as the bundle spells it: rooted, no anchor."""
    return "/" + url.split("#", 1)[0].lstrip("/")


# Kinds whose question the docs answer (they list expect_pages); after_refusal may go
# either way; the rest expect a refusal. Kinds that continue a conversation, and the kind
# the earlier turn they continue must have had.
ANSWER_KINDS = frozenset({"answerable", "followup_elliptical"})
EITHER_KINDS = frozenset({"after_refusal"})
HISTORY_KINDS = {
    "followup_elliptical": "answer",
    "followup_unrelated": "answer",
    "after_refusal": "refusal",
}


def parse_question(data: Any, where: str) -> EvalQuestion:
    """Check one decoded line of a question set; raise EvalError naming `where` and the field.

    The one parser of the format: `docpilot eval`, the benchmarks and the dev-set tools
    (benchmarks/devsets/devsets.py, which adds its own policy on top) all read lines here."""
    if not isinstance(data, dict):
        raise EvalError(f"{where}: expected a JSON object")
    unknown = set(data) - _FIELDS
    if unknown:
        raise EvalError(f"{where}: unknown field(s) {sorted(unknown)}; known: {sorted(_FIELDS)}")
    question = data.get("question")
    if not isinstance(question, str) or not question.strip():
        raise EvalError(f"{where}: field 'question' must be a non-empty string")
    kind = data.get("kind")
    if kind not in KINDS:
        raise EvalError(f"{where}: field 'kind' is {kind!r}, expected one of {list(KINDS)}")
    pages = data.get("expect_pages", [])
    if not isinstance(pages, list) or not all(isinstance(p, str) for p in pages):
        raise EvalError(f"{where}: field 'expect_pages' must be a list of page URLs ('' = home)")
    if kind in ANSWER_KINDS and not pages:
        raise EvalError(f"{where}: a {kind!r} question needs 'expect_pages'")
    if kind not in ANSWER_KINDS | EITHER_KINDS and pages:
        raise EvalError(f"{where}: kind {kind!r} expects a refusal, so expect_pages must be empty")
    history = _history(data.get("history", []), kind, where)
    for key in ("page", "context", "lang", "source"):
        if key in data and not isinstance(data[key], str):
            raise EvalError(f"{where}: field {key!r} must be a string")
    return EvalQuestion(
        question=question,
        kind=kind,
        expect_pages=tuple(page_path_of(p) for p in pages),
        history=history,
        page=data.get("page"),
        context=data.get("context", ""),
        lang=data.get("lang", "en"),
        source=data.get("source", ""),
    )


def _history(raw: Any, kind: str, where: str) -> tuple[HistoryItem, ...]:
    if not isinstance(raw, list):
        raise EvalError(f"{where}: field 'history' must be a list")
    history = []
    for i, item in enumerate(raw):
        at = f"{where}: field 'history[{i}]"
        if not isinstance(item, dict) or not isinstance(item.get("question"), str):
            raise EvalError(f"{at}.question' must be a string")
        turn_kind = item.get("kind", "answer")
        if turn_kind not in ("answer", "refusal"):
            raise EvalError(f"{at}.kind' is {turn_kind!r}, expected 'answer' or 'refusal'")
        markdown = item.get("markdown", "")
        if not isinstance(markdown, str):
            raise EvalError(f"{at}.markdown' must be a string")
        history.append(HistoryItem(question=item["question"], kind=turn_kind, markdown=markdown))
    if kind in HISTORY_KINDS:
        if not history:
            raise EvalError(f"{where}: kind {kind!r} needs a history with the earlier turn")
        if history[-1].kind != HISTORY_KINDS[kind]:
            raise EvalError(
                f"{where}: kind {kind!r} needs its last history turn to be "
                f"{HISTORY_KINDS[kind]!r}"
            )
    elif history:
        raise EvalError(f"{where}: kind {kind!r} is a first turn, so history must be empty")
    return tuple(history)


def load_questions(path: str | Path) -> list[EvalQuestion]:
    """Read a question set; every bad line is an EvalError naming file:line and field."""
    questions = []
    text = Path(path).read_text(encoding="utf-8")
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            data = json.loads(line)
        except ValueError as exc:
            raise EvalError(f"{where}: not JSON ({exc})") from None
        questions.append(parse_question(data, where))
    if not questions:
        raise EvalError(f"{path}: no questions")
    return questions


