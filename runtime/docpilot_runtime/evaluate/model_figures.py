"""The figures `docpilot eval --model` adds: what the model did with each turn, per kind.

For a turn a model took part in: how it ended (a cited answer; refused by the gate before
any model; refused after the model answered with nothing citable; passages when no model
answered), whether the answer's citations support it, whether it cites an expected page,
what the validator removed (ids no excerpt of the turn carried, links to pages that do
not exist), how long the reader waited for the first validated text and for the whole
turn, and the tokens used (every call of the turn, failed ones and the rewrite included).

"Supported" is the support check's rule (``check.support``), applied to the answer as
shown against the excerpts it cites: every sentence that claims something has its
numbers, names and words in one of them.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from docpilot_runtime.check.support import Excerpt, judge
from docpilot_runtime.evaluate.questions import KINDS, EvalQuestion, page_path_of
from docpilot_runtime.retrieve.site import Site


@dataclass(frozen=True)
class ModelTurn:
    """One turn with a model, as the model figures need it."""

    result_kind: str
    ended: str  # "answer" | "gate" | "after_model" | "passages" | the kind (social, ...)
    supported: bool | None  # an answer: every claim found in a cited excerpt
    cites_expected: bool | None  # an answer to a question with expect_pages
    tentative: bool
    cited_by: str | None
    ids_stripped: int
    links_delinked: int
    first_text: float | None  # seconds to the first validated text shown (None: none shown)
    total: float  # seconds for the whole turn
    input_tokens: int
    output_tokens: int
    calls: int  # model calls made (steps of every attempt, the rewrite included)


def model_turn(
    question: EvalQuestion,
    result: dict[str, Any],
    site: Site,
    first_text: float | None,
    total: float,
) -> ModelTurn:
    kind = result["kind"]
    usage = result.get("usage") or {}
    checks = result.get("checks") or {}
    if kind == "answer":
        ended = "answer"
    elif kind == "refusal":
        ended = "after_model" if result.get("fallback_reason") == "uncited" else "gate"
    else:
        ended = kind
    supported = cites_expected = None
    if kind == "answer":
        supported = answer_supported(result, site, question.question)
        if question.expect_pages:
            wanted = {page_path_of(p) for p in question.expect_pages}
            cited = {page_path_of(c["url"]) for c in result.get("citations") or [] if c["url"]}
            cites_expected = bool(wanted & cited)
    return ModelTurn(
        result_kind=kind,
        ended=ended,
        supported=supported,
        cites_expected=cites_expected,
        tentative=bool(result.get("tentative")),
        cited_by=checks.get("cited_by"),
        ids_stripped=len(checks.get("ids_stripped") or []),
        links_delinked=len(checks.get("links_delinked") or []),
        first_text=first_text,
        total=total,
        input_tokens=int(usage.get("input_tokens") or 0)
        + int(usage.get("cache_read_tokens") or 0),
        output_tokens=int(usage.get("output_tokens") or 0),
        calls=int(usage.get("steps") or 0),
    )


def answer_supported(result: dict[str, Any], site: Site, question: str) -> bool:
    """Whether every claiming sentence of the answer is found in an excerpt it cites."""
    rows = site.unit_rows
    cited = []
    for citation in result.get("citations") or []:
        row = rows.get(citation["id"])
        if row is not None:
            unit = site.bundle.units[row]
            title = " > ".join((*unit.breadcrumb, unit.title))
            cited.append(Excerpt(unit.id, f"{title}\n{unit.text}"))
    if not cited:
        return False
    verdicts = judge(result["markdown"], cited, question)
    return all(v.source for v in verdicts if v.claims)


@dataclass(frozen=True)
class ModelKindFigures:
    """Per kind: how the turns ended, what the validator removed, waits and tokens."""

    count: int
    cited_answer: float  # share ending as an answer with citations
    supported: float  # share ending as an answer its citations support
    cites_expected: float | None  # of the answers to questions with expect_pages
    tentative: float  # share ending as a tentative answer
    refused_by_gate: float
    refused_after_model: float
    passages: float
    ids_stripped: int  # turns whose answer lost an invented id
    links_delinked: int  # turns whose answer lost a link
    first_text_p50: float | None
    first_text_p95: float | None
    total_p50: float | None
    total_p95: float | None
    input_tokens: float  # mean per turn
    output_tokens: float
    calls: float  # mean model calls per turn


def _quantile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(sorted(values), n=100, method="inclusive")[int(q * 100) - 1]


def _share(rows: Sequence[ModelTurn], test: Any) -> float:
    return sum(1 for r in rows if test(r)) / len(rows) if rows else 0.0


def summarise_model(
    questions: Sequence[EvalQuestion], turns: Sequence[ModelTurn]
) -> dict[str, ModelKindFigures]:
    """The model figures per kind, in the question set's kind order."""
    out: dict[str, ModelKindFigures] = {}
    for kind in KINDS:
        rows = [t for q, t in zip(questions, turns, strict=True) if q.kind == kind]
        if not rows:
            continue
        graded = [r for r in rows if r.cites_expected is not None]
        firsts = [r.first_text for r in rows if r.first_text is not None]
        totals = [r.total for r in rows]
        out[kind] = ModelKindFigures(
            count=len(rows),
            cited_answer=_share(rows, lambda r: r.ended == "answer"),
            supported=_share(rows, lambda r: r.ended == "answer" and r.supported),
            cites_expected=_share(graded, lambda r: r.cites_expected) if graded else None,
            tentative=_share(rows, lambda r: r.ended == "answer" and r.tentative),
            refused_by_gate=_share(rows, lambda r: r.ended == "gate"),
            refused_after_model=_share(rows, lambda r: r.ended == "after_model"),
            passages=_share(rows, lambda r: r.ended == "passages"),
            ids_stripped=sum(1 for r in rows if r.ids_stripped),
            links_delinked=sum(1 for r in rows if r.links_delinked),
            first_text_p50=_quantile(firsts, 0.5),
            first_text_p95=_quantile(firsts, 0.95),
            total_p50=_quantile(totals, 0.5),
            total_p95=_quantile(totals, 0.95),
            input_tokens=statistics.fmean(r.input_tokens for r in rows),
            output_tokens=statistics.fmean(r.output_tokens for r in rows),
            calls=statistics.fmean(r.calls for r in rows),
        )
    return out


def format_model_figures(figures: dict[str, ModelKindFigures]) -> str:
    """The per-kind model table for a terminal or a Markdown file."""

    def pct(value: float | None) -> str:
        return "–" if value is None else f"{value:.2f}"

    def secs(value: float | None) -> str:
        return "–" if value is None else f"{value:.1f}"

    lines = [
        "| kind | n | cited answer | supported | cites expected | tentative | refused by gate "
        "| refused after model | passages | ids stripped | links de-linked "
        "| first text p50/p95 s | total p50/p95 s | tokens in/out | calls |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for kind, f in figures.items():
        lines.append(
            f"| {kind} | {f.count} | {pct(f.cited_answer)} | {pct(f.supported)} | "
            f"{pct(f.cites_expected)} | {pct(f.tentative)} | {pct(f.refused_by_gate)} | "
            f"{pct(f.refused_after_model)} | {pct(f.passages)} | {f.ids_stripped} | "
            f"{f.links_delinked} | {secs(f.first_text_p50)} / {secs(f.first_text_p95)} | "
            f"{secs(f.total_p50)} / {secs(f.total_p95)} | {f.input_tokens:.0f} / "
            f"{f.output_tokens:.0f} | {f.calls:.1f} |"
        )
    return "\n".join(lines)
