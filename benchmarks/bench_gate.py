"""The refusal gate on real questions: does it refuse near-misses and still answer?

Builds each dev-set corpus (benchmarks/devsets/README.md) with the DocPilot plugin and
its default embedder (the gate is calibrated at build time, from probes only), then asks
every question of each half as one real turn (``evaluation.evaluate``, no model) in the
bundle's mode (hybrid) and in lexical mode (the same bundle without its dense channel:
what static mode runs). Prints, per corpus, split and mode: the gate's balanced accuracy
over every question of the half (all kinds), near-miss refusal, unrelated refusal and the
share of ``answerable`` questions answered, beside the calibrated threshold.

    .venv/bin/python benchmarks/bench_gate.py            # four corpora, both halves
    .venv/bin/python benchmarks/bench_gate.py --smoke    # httpx tune, lexical, a few questions

Choose on the tune halves only; the test halves are the estimate (devsets/README.md).
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from docpilot_runtime.evaluate.figures import Report
from docpilot_runtime.evaluate.questions import EvalQuestion, load_questions
from docpilot_runtime.evaluate.run import evaluate, evaluation_runtime

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_lexical import CORPORA, DEVSETS, SPLITS, build
from common import tree_state


@dataclass(frozen=True)
class GateFigures:
    """One half in one mode: what the gate did with each kind of question."""

    questions: int
    balanced_accuracy: float | None
    near_miss_refused: float | None
    unrelated_refused: float | None
    answerable_answered: float | None
    threshold: float

    @staticmethod
    def of(report: Report, threshold: float) -> GateFigures:
        def answered(kind: str) -> float | None:
            figures = report.kinds.get(kind)
            return None if figures is None else figures.answered

        def refused(kind: str) -> float | None:
            share = answered(kind)
            return None if share is None else 1.0 - share

        return GateFigures(
            questions=report.questions,
            balanced_accuracy=report.balanced_accuracy,
            near_miss_refused=refused("near_miss"),
            unrelated_refused=refused("unrelated"),
            answerable_answered=answered("answerable"),
            threshold=threshold,
        )

    def cells(self) -> str:
        def show(value: float | None) -> str:
            return "–" if value is None else f"{value:.2f}"

        return " | ".join(
            show(v)
            for v in (
                self.balanced_accuracy,
                self.near_miss_refused,
                self.unrelated_refused,
                self.answerable_answered,
                self.threshold,
            )
        )


def measure(site_dir: Path, mode: str, questions: Sequence[EvalQuestion]) -> GateFigures:
    runtime = evaluation_runtime(site_dir, "lexical" if mode == "lexical" else "bundle")
    site = runtime.sites[0]
    threshold = site.gate_params(site.mode).threshold
    return GateFigures.of(evaluate(runtime, questions), threshold)


def smoke_questions(every: list[EvalQuestion]) -> list[EvalQuestion]:
    picked: list[EvalQuestion] = []
    for kind in ("answerable", "near_miss", "unrelated"):
        picked += [q for q in every if q.kind == kind][:3]
    return picked


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="httpx tune, lexical, 9 questions")
    parser.add_argument("--corpus", action="append", choices=CORPORA, help="repeatable")
    parser.add_argument("--split", action="append", choices=SPLITS, help="repeatable")
    args = parser.parse_args(argv)
    corpora = args.corpus or (["httpx"] if args.smoke else list(CORPORA))
    splits = args.split or (["tune"] if args.smoke else list(SPLITS))
    # The smoke builds without an embedder (seconds, not a minute); its mode is lexical.
    embedder = "none" if args.smoke else None
    modes = ("lexical",) if args.smoke else ("hybrid", "lexical")
    print(f"# bench_gate: {dt.date.today().isoformat()}, tree {tree_state()}\n")
    print(
        "| corpus | split | n | mode | balanced accuracy | near-miss refused "
        "| unrelated refused | answerable answered | threshold |\n"
        "|---|---|---:|---|---:|---:|---:|---:|---:|"
    )
    with tempfile.TemporaryDirectory(prefix="bench-gate-") as tmp:
        for corpus in corpora:
            site_dir = build(corpus, embedder, Path(tmp))
            for split in splits:
                every = load_questions(DEVSETS / corpus / f"{split}.jsonl")
                if args.smoke:
                    every = smoke_questions(every)
                for mode in modes:
                    figures = measure(site_dir, mode, every)
                    print(
                        f"| {corpus} | {split} | {figures.questions} | {mode} | {figures.cells()} |"
                    )


if __name__ == "__main__":
    main()
