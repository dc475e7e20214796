"""The figures `docpilot eval` reports: per kind and per mode, answered rates, page
recall@k and MRR, refusal precision and recall, the gate's balanced accuracy, confidence
bands and the worst misses."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from docpilot_runtime.evaluate.questions import KINDS, EvalQuestion, page_path_of

if TYPE_CHECKING:
    from docpilot_runtime.evaluate.model_figures import ModelKindFigures, ModelTurn


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
    model: ModelTurn | None = None  # with a model in the loop (`docpilot eval --model`)


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
    model: dict[str, ModelKindFigures] | None = None  # per kind, with a model in the loop

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
        page = page_path_of(unit_id.split("~", 1)[0])
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


