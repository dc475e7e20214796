"""`docpilot eval`: each question one real turn through `Runtime.ask`, with no model (so the
gate and the retrieval are measured, not a model's wording), in the bundle's mode and in
lexical mode (what static mode runs); with ``models=True`` the bundle's mode calls the
configured providers too, and `evaluate.model_figures` adds what the model did. The
questions are read by `evaluate.questions`, scored by `evaluate.figures`."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from docpilot_runtime.retrieve.search import Searcher
from docpilot_runtime.retrieve.site import Site

if TYPE_CHECKING:
    from docpilot_runtime.turn import Runtime
from docpilot_runtime.evaluate.figures import Report, format_report, outcome, summarise
from docpilot_runtime.evaluate.model_figures import (
    format_model_figures,
    model_turn,
    summarise_model,
)
from docpilot_runtime.evaluate.questions import EvalMode, EvalQuestion, load_questions


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
    site_dir: str | Path, mode: EvalMode = "bundle", settings: Any = None, models: bool = False
) -> Runtime:
    """A built site's runtime for evaluation: nothing recorded, and no model unless
    ``models`` (the configured providers answer: the end-to-end figures); without one the
    gate and retrieval are measured, not a model's wording. ``mode="lexical"`` drops the
    dense channel (and the models). Raises BundleError naming the file."""
    from docpilot_runtime.turn import load_runtime

    runtime = load_runtime(site_dir, settings)
    kept = runtime.providers if models and mode != "lexical" else []
    runtime = dataclasses.replace(runtime, providers=kept, recorder=None)
    return lexical_runtime(runtime) if mode == "lexical" else runtime


async def evaluate_async(
    runtime: Any, questions: Sequence[EvalQuestion], with_context: bool = False,
    mode: str = "bundle",
) -> Report:
    """Ask every question as one turn of ``runtime`` (a `turn.Runtime`) and summarise.
    A question's ``page`` picks the bundle (the manifest's language or version prefix).
    With providers, each turn's waits and what its model did are measured too."""
    outcomes = []
    with_model = bool(runtime.providers)
    for question in questions:
        first: list[float] = []
        began = time.monotonic()

        async def emit(event: Any, first: list[float] = first, began: float = began) -> None:
            if event.name == "delta" and not first:
                first.append(time.monotonic() - began)

        result = (await runtime.ask(question.request(with_context), emit)).to_dict()
        took = time.monotonic() - began
        site = runtime.site_for(question.page)
        found = outcome(question, result, site.prefix)
        if with_model:
            turn = model_turn(question, result, site, first[0] if first else None, took)
            found = dataclasses.replace(found, model=turn)
        outcomes.append(found)
    report = summarise(outcomes, mode)
    if with_model:
        turns = [o.model for o in outcomes if o.model is not None]
        report = dataclasses.replace(report, model=summarise_model(questions, turns))
    return report


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
    models: bool = False,
) -> EvalRun:
    """Evaluate one question set in each of ``modes``: the bundle loaded once, the lexical
    mode being the same runtime without its dense channel (and without models)."""
    asked = load_questions(questions_file)
    runtime = evaluation_runtime(site_dir, "bundle", settings, models)
    reports: dict[str, Report] = {}
    for mode in modes:
        chosen = lexical_runtime(runtime) if mode == "lexical" else runtime
        reports[mode] = evaluate(chosen, asked, with_context, mode)
    return EvalRun(str(questions_file), str(site_dir), with_context, reports)


def format_run(run: EvalRun) -> str:
    """Every mode's table, one after the other, each under its mode's name."""
    parts = []
    for mode, report in run.reports.items():
        name = f"{mode} ({report.retriever})" if report.retriever else mode
        parts.append(f"## {name}\n\n{format_report(report)}")
        if report.model:
            parts.append(f"### {name} with the model\n\n{format_model_figures(report.model)}")
    return "\n\n".join(parts)
