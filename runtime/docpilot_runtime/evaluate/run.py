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
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from docpilot_runtime.retrieve.search import Searcher
from docpilot_runtime.retrieve.site import Site
from docpilot_runtime.shared.types import AskRequest, HistoryItem

if TYPE_CHECKING:
    from docpilot_runtime.turn import Runtime

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


def _page(url: str) -> str:
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
        expect_pages=tuple(_page(p) for p in pages),
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
    expected: tuple[str, ...] = ()  # the question's expect_pages
    earlier: str | None = None  # the last earlier turn's question, for a follow-up


@dataclass(frozen=True)
class KindFigures:
    count: int
    answered: float  # share of questions not refused
    recall_at_1: float | None = None  # over questions with expect_pages
    recall_at_5: float | None = None
    mrr: float | None = None


@dataclass(frozen=True)
class Band:
    """Questions whose retrieval confidence fell in low..high (inclusive): is it honest?"""

    low: int
    high: int
    count: int
    should_answer: float | None  # share the docs answer (what confidence should predict)
    answered: float | None  # share the gate answered
    recall_at_5: float | None  # over the band's questions with expect_pages


@dataclass(frozen=True)
class Miss:
    """One question the site got wrong, with why; `severity` orders the worst first."""

    question: str
    kind: str
    why: str
    confidence: int | None
    expected: tuple[str, ...]
    pages: tuple[str, ...]
    severity: float
    earlier: str | None = None


@dataclass(frozen=True)
class Report:
    questions: int
    kinds: dict[str, KindFigures]
    answer_rate: float | None  # over questions that should be answered
    refusal_rate: float | None  # over questions that should be refused (refusal recall)
    balanced_accuracy: float | None
    outcomes: list[Outcome] = field(default_factory=list)
    refusal_precision: float | None = None  # of the refusals, the share that were right
    near_miss_refusal: float | None = None  # refusal rate over near_miss questions
    recall_at_1: float | None = None  # over every question with expect_pages
    recall_at_5: float | None = None
    mrr: float | None = None
    bands: tuple[Band, ...] = ()
    misses: tuple[Miss, ...] = ()  # worst first
    mode: str = "bundle"
    retriever: str | None = None  # what the turns reported: hybrid or lexical

    @property
    def refusal_recall(self) -> float | None:
        return self.refusal_rate

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["outcomes"] = [asdict(o) for o in self.outcomes]
        data["refusal_recall"] = self.refusal_recall
        return data


def ranked_pages(ranked: Sequence[str]) -> list[str]:
    """Distinct page URLs of ranked unit ids, best first."""
    pages: list[str] = []
    for unit_id in ranked:
        page = _page(unit_id.split("~", 1)[0])
        if page not in pages:
            pages.append(page)
    return pages


def under_prefix(page: str, prefix: str) -> str:
    """A sub-site bundle's page URL (``/guide/`` in the bundle under ``/de/``) as the site
    root spells it (``/de/guide/``), which is how question files name expected pages."""
    return page if prefix in ("", "/") else "/" + prefix.strip("/") + page


def outcome(question: EvalQuestion, result: dict[str, Any], prefix: str = "/") -> Outcome:
    pages = [under_prefix(p, prefix) for p in ranked_pages(result.get("ranked") or [])]
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
        expected=question.expect_pages,
        earlier=question.history[-1].question if question.history else None,
    )


def _share(flags: Iterable[bool]) -> float | None:
    values = list(flags)
    return sum(values) / len(values) if values else None


BAND_EDGES = (0, 20, 40, 60, 80, 101)  # confidence bands [low, next): 0-19, … 80-100


def _recalls(graded: Sequence[Outcome]) -> tuple[float | None, float | None, float | None]:
    if not graded:
        return None, None, None
    return (
        _share(o.rank == 1 for o in graded),
        _share(o.rank is not None and o.rank <= 5 for o in graded),
        sum(1 / o.rank for o in graded if o.rank) / len(graded),
    )


def confidence_bands(outcomes: Sequence[Outcome]) -> tuple[Band, ...]:
    """Answer rate and recall@5 per confidence band (turns without a confidence left out)."""
    bands = []
    for low, high in pairwise(BAND_EDGES):
        rows = [o for o in outcomes if o.confidence is not None and low <= o.confidence < high]
        graded = [o for o in rows if o.should_answer]
        bands.append(Band(
            low=low,
            high=min(high, 101) - 1,  # inclusive: 0-19, 20-39, … 80-100
            count=len(rows),
            should_answer=_share(o.should_answer for o in rows),
            answered=_share(o.answered for o in rows),
            recall_at_5=_recalls(graded)[1],
        ))
    return tuple(bands)


def worst_misses(outcomes: Sequence[Outcome]) -> tuple[Miss, ...]:
    """Every wrong outcome, the worst first: a confident answer to a question the docs do
    not cover, then answerable questions whose page was not found (refused before found
    but ranked low), each group by confidence, the most confident first."""
    misses = []
    for o in outcomes:
        confidence = (o.confidence or 0) / 100
        if not o.should_answer and o.answered:
            why, severity = "answered, but the docs do not cover it", 3 + confidence
        elif o.should_answer and o.rank is None:
            why = "refused, and no expected page in the ranked list" if not o.answered else (
                "answered from other pages: no expected page in the ranked list")
            severity = 2.5 + confidence if o.answered else 2 + confidence
        elif o.should_answer and not o.answered:
            why, severity = f"refused, though the expected page ranked {o.rank}", 1.5 + confidence
        elif o.should_answer and o.rank is not None and o.rank > 5:
            why, severity = f"the expected page ranked {o.rank}", 1 + confidence
        else:
            continue
        misses.append(
            Miss(o.question, o.kind, why, o.confidence, o.expected, o.pages, severity, o.earlier)
        )
    return tuple(sorted(misses, key=lambda m: -m.severity))


def summarise(outcomes: Sequence[Outcome], mode: str = "bundle") -> Report:
    kinds: dict[str, KindFigures] = {}
    for kind in KINDS:
        rows = [o for o in outcomes if o.kind == kind]
        if not rows:
            continue
        r1, r5, mrr = _recalls([o for o in rows if o.should_answer])
        kinds[kind] = KindFigures(
            count=len(rows),
            answered=_share(o.answered for o in rows) or 0.0,
            recall_at_1=r1,
            recall_at_5=r5,
            mrr=mrr,
        )
    answer_rate = _share(o.answered for o in outcomes if o.should_answer)
    refusal_rate = _share(not o.answered for o in outcomes if not o.should_answer)
    balanced = (
        (answer_rate + refusal_rate) / 2
        if answer_rate is not None and refusal_rate is not None
        else None
    )
    r1, r5, mrr = _recalls([o for o in outcomes if o.should_answer])
    retrievers = {o.retriever for o in outcomes if o.retriever}
    return Report(
        questions=len(outcomes),
        kinds=kinds,
        answer_rate=answer_rate,
        refusal_rate=refusal_rate,
        balanced_accuracy=balanced,
        outcomes=list(outcomes),
        refusal_precision=_share(not o.should_answer for o in outcomes if not o.answered),
        near_miss_refusal=_share(not o.answered for o in outcomes if o.kind == "near_miss"),
        recall_at_1=r1,
        recall_at_5=r5,
        mrr=mrr,
        bands=confidence_bands(outcomes),
        misses=worst_misses(outcomes),
        mode=mode,
        retriever=retrievers.pop() if len(retrievers) == 1 else None,
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
    from docpilot_runtime.turn import load_runtime

    runtime = load_runtime(site_dir, settings)
    runtime = dataclasses.replace(runtime, providers=[], recorder=None)
    return lexical_runtime(runtime) if mode == "lexical" else runtime


async def evaluate_async(
    runtime: Any, questions: Sequence[EvalQuestion], with_context: bool = False,
    mode: str = "bundle",
) -> Report:
    """Ask every question as one turn of ``runtime`` (a `turn.Runtime`) and summarise.
    A question's ``page`` picks the bundle (the manifest's language or version prefix)."""
    outcomes = []
    for question in questions:
        result = await runtime.ask(question.request(with_context))
        prefix = runtime.site_for(question.page).prefix
        outcomes.append(outcome(question, result.to_dict(), prefix))
    return summarise(outcomes, mode)


def evaluate(
    runtime: Any, questions: Sequence[EvalQuestion], with_context: bool = False,
    mode: str = "bundle",
) -> Report:
    return asyncio.run(evaluate_async(runtime, questions, with_context, mode))


@dataclass(frozen=True)
class EvalRun:
    """One question set evaluated in one or more modes of the same built site."""

    questions_file: str
    site_dir: str
    with_context: bool
    reports: dict[str, Report]  # by mode: "bundle", "lexical"

    def to_dict(self) -> dict[str, Any]:
        return {
            "questions_file": self.questions_file,
            "site_dir": self.site_dir,
            "with_context": self.with_context,
            "modes": {mode: report.to_dict() for mode, report in self.reports.items()},
        }


def evaluate_modes(
    site_dir: str | Path,
    questions_file: str | Path,
    modes: Sequence[EvalMode] = ("bundle", "lexical"),
    *,
    with_context: bool = False,
    settings: Any = None,
) -> EvalRun:
    """Evaluate one question set in each of ``modes``: the bundle loaded once, the lexical
    mode being the same runtime without its dense channel."""
    asked = load_questions(questions_file)
    runtime = evaluation_runtime(site_dir, "bundle", settings)
    reports: dict[str, Report] = {}
    for mode in modes:
        chosen = lexical_runtime(runtime) if mode == "lexical" else runtime
        reports[mode] = evaluate(chosen, asked, with_context, mode)
    return EvalRun(str(questions_file), str(site_dir), with_context, reports)


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
        f"refusal precision {pct(report.refusal_precision)}, recall "
        f"{pct(report.refusal_recall)}; near-miss refusal {pct(report.near_miss_refusal)}",
        "",
        "| confidence | n | should answer | answered | R@5 |",
        "|---|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {b.low}-{b.high} | {b.count} | {pct(b.should_answer)} | {pct(b.answered)} | "
        f"{pct(b.recall_at_5)} |"
        for b in report.bands
    ]
    return "\n".join(lines)


def format_run(run: EvalRun) -> str:
    """Every mode's table, one after the other, each under its mode's name."""
    parts = []
    for mode, report in run.reports.items():
        name = f"{mode} ({report.retriever})" if report.retriever else mode
        parts.append(f"## {name}\n\n{format_report(report)}")
    return "\n\n".join(parts)
