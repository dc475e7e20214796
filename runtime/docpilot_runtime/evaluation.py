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

import asyncio
import dataclasses
import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .retrieval import Searcher, Site
from .types import AskRequest, HistoryItem

if TYPE_CHECKING:
    from .turn import Runtime

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

    @property
    def should_answer(self) -> bool:
        return bool(self.expect_pages)

    def request(self, with_context: bool = False) -> AskRequest:
        text = self.question
        if with_context and self.context:
            text = f"{text}\n\n{self.context}"
        return AskRequest(question=text, history=self.history, page=self.page)


def _page(url: str) -> str:
    """A page URL as the bundle spells it: rooted, no anchor."""
    return "/" + url.split("#", 1)[0].lstrip("/")


def parse_question(data: Any, where: str) -> EvalQuestion:
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
    if kind == "answerable" and not pages:
        raise EvalError(f"{where}: an 'answerable' question needs 'expect_pages'")
    history = []
    for i, item in enumerate(data.get("history", [])):
        if not isinstance(item, dict) or not isinstance(item.get("question"), str):
            raise EvalError(f"{where}: field 'history[{i}].question' must be a string")
        history.append(
            HistoryItem(
                question=item["question"],
                kind=str(item.get("kind", "answer")),
                markdown=str(item.get("markdown", "")),
            )
        )
    for key in ("page", "context", "lang", "source"):
        if key in data and not isinstance(data[key], str):
            raise EvalError(f"{where}: field {key!r} must be a string")
    return EvalQuestion(
        question=question,
        kind=kind,
        expect_pages=tuple(_page(p) for p in pages),
        history=tuple(history),
        page=data.get("page"),
        context=data.get("context", ""),
        lang=data.get("lang", "en"),
    )


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


@dataclass(frozen=True)
class Outcome:
    """One question's turn, as the report needs it."""

    question: str
    kind: str
    should_answer: bool
    answered: bool
    result_kind: str
    confidence: int | None
    rescued: bool
    retriever: str | None
    rank: int | None  # 1-based rank of the first expected page among the ranked pages
    pages: tuple[str, ...]  # the first five distinct ranked pages


@dataclass(frozen=True)
class KindFigures:
    count: int
    answered: float  # share of questions not refused
    recall_at_1: float | None = None  # over questions with expect_pages
    recall_at_5: float | None = None
    mrr: float | None = None


@dataclass(frozen=True)
class Report:
    questions: int
    kinds: dict[str, KindFigures]
    answer_rate: float | None  # over questions that should be answered
    refusal_rate: float | None  # over questions that should be refused
    balanced_accuracy: float | None
    outcomes: list[Outcome] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["outcomes"] = [asdict(o) for o in self.outcomes]
        return data


def ranked_pages(ranked: Sequence[str]) -> list[str]:
    """Distinct page URLs of ranked unit ids, best first."""
    pages: list[str] = []
    for unit_id in ranked:
        page = _page(unit_id.split("~", 1)[0])
        if page not in pages:
            pages.append(page)
    return pages


def outcome(question: EvalQuestion, result: dict[str, Any]) -> Outcome:
    pages = ranked_pages(result.get("ranked") or [])
    rank = next((i + 1 for i, p in enumerate(pages) if p in question.expect_pages), None)
    return Outcome(
        question=question.question,
        kind=question.kind,
        should_answer=question.should_answer,
        answered=result["kind"] != "refusal",
        result_kind=result["kind"],
        confidence=result.get("confidence"),
        rescued=bool(result.get("rescued")),
        retriever=result.get("retriever"),
        rank=rank,
        pages=tuple(pages[:5]),
    )


def _share(flags: Iterable[bool]) -> float | None:
    values = list(flags)
    return sum(values) / len(values) if values else None


def summarise(outcomes: Sequence[Outcome]) -> Report:
    kinds: dict[str, KindFigures] = {}
    for kind in KINDS:
        rows = [o for o in outcomes if o.kind == kind]
        if not rows:
            continue
        graded = [o for o in rows if o.should_answer]
        kinds[kind] = KindFigures(
            count=len(rows),
            answered=_share(o.answered for o in rows) or 0.0,
            recall_at_1=_share(o.rank == 1 for o in graded),
            recall_at_5=_share(o.rank is not None and o.rank <= 5 for o in graded),
            mrr=sum(1 / o.rank for o in graded if o.rank) / len(graded) if graded else None,
        )
    answer_rate = _share(o.answered for o in outcomes if o.should_answer)
    refusal_rate = _share(not o.answered for o in outcomes if not o.should_answer)
    balanced = (
        (answer_rate + refusal_rate) / 2
        if answer_rate is not None and refusal_rate is not None
        else None
    )
    return Report(
        questions=len(outcomes),
        kinds=kinds,
        answer_rate=answer_rate,
        refusal_rate=refusal_rate,
        balanced_accuracy=balanced,
        outcomes=list(outcomes),
    )


def lexical_site(site: Site) -> Site:
    """The same bundle with no dense channel: what the server answers with when the
    query embedder is unavailable (and, by the shared core, what static mode answers)."""
    searcher = Searcher(site.searcher.lexical, None, site.params, site.bundle.units)
    return Site(prefix=site.prefix, bundle=site.bundle, searcher=searcher)


def lexical_runtime(runtime: Runtime) -> Runtime:
    """``runtime`` with every site in lexical mode (and no model, as `evaluate` wants)."""
    return dataclasses.replace(
        runtime, sites=[lexical_site(s) for s in runtime.sites], providers=[], recorder=None
    )


def evaluation_runtime(
    site_dir: str | Path, mode: EvalMode = "bundle", settings: Any = None
) -> Runtime:
    """A built site's runtime for evaluation: no model (the gate and retrieval are
    measured, not a model's wording), nothing recorded; ``mode="lexical"`` drops the
    dense channel. Raises BundleError naming the file."""
    from .turn import load_runtime

    runtime = load_runtime(site_dir, settings)
    runtime = dataclasses.replace(runtime, providers=[], recorder=None)
    return lexical_runtime(runtime) if mode == "lexical" else runtime


async def evaluate_async(
    runtime: Any, questions: Sequence[EvalQuestion], with_context: bool = False
) -> Report:
    """Ask every question as one turn of ``runtime`` (a `turn.Runtime`) and summarise."""
    outcomes = []
    for question in questions:
        result = await runtime.ask(question.request(with_context))
        outcomes.append(outcome(question, result.to_dict()))
    return summarise(outcomes)


def evaluate(runtime: Any, questions: Sequence[EvalQuestion], with_context: bool = False) -> Report:
    return asyncio.run(evaluate_async(runtime, questions, with_context))


def format_report(report: Report) -> str:
    """The per-kind table for a terminal or a Markdown file."""

    def pct(value: float | None) -> str:
        return "–" if value is None else f"{value:.2f}"

    lines = [
        "| kind | n | answered | R@1 | R@5 | MRR |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for kind, f in report.kinds.items():
        lines.append(
            f"| {kind} | {f.count} | {pct(f.answered)} | {pct(f.recall_at_1)} | "
            f"{pct(f.recall_at_5)} | {pct(f.mrr)} |"
        )
    lines += [
        "",
        f"questions {report.questions}; answer rate (should answer) {pct(report.answer_rate)}; "
        f"refusal rate (should refuse) {pct(report.refusal_rate)}; "
        f"gate balanced accuracy {pct(report.balanced_accuracy)}",
    ]
    return "\n".join(lines)
