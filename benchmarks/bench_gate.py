"""The refusal gate on real questions: does it refuse off-topic and near-miss questions
and still answer covered ones?

Builds each dev-set corpus (benchmarks/devsets/README.md; the sets made from real threads
first, then the hand-written ones) with the DocPilot plugin and its default embedder (the
gate is calibrated at build time, from probes only), then asks every question of each half
as one real turn (``evaluation.evaluate``, no model) in the bundle's mode (hybrid) and in
lexical mode (the same bundle without its dense channel: what static mode runs). Prints,
per corpus, split and mode: the share of ``unrelated`` (off-topic) and ``near_miss``
questions refused and of ``answerable`` questions answered, each with its 95 % Wilson
interval and counts, the gate's balanced accuracy over every question of the half (all
kinds) and the calibrated threshold; then the same pooled over the real sets' halves and
over the hand-written ones' (never the two together).

    .venv/bin/python benchmarks/bench_gate.py            # every corpus, both halves
    .venv/bin/python benchmarks/bench_gate.py --smoke    # httpx tune, lexical, a few questions
    .venv/bin/python benchmarks/bench_gate.py --sites benchmarks/out/quality   # reuse builds

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

from docpilot_runtime.evaluate.figures import Outcome
from docpilot_runtime.evaluate.questions import EvalQuestion, load_questions
from docpilot_runtime.evaluate.run import evaluate, evaluation_runtime

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import share_cell, tree_state
from corpus_sites import CORPORA, DEVSETS, SPLITS, build, group_of

MODES = ("hybrid", "lexical")


@dataclass(frozen=True)
class GateCounts:
    """What the gate did with one set of turns: counts, so halves can be pooled."""

    unrelated: tuple[int, int]  # (refused, asked)
    near_miss: tuple[int, int]
    answerable: tuple[int, int]  # (answered, asked)
    should_answer: tuple[int, int]  # every kind that lists expect_pages
    should_refuse: tuple[int, int]  # every kind that does not

    @staticmethod
    def of(outcomes: Sequence[Outcome]) -> GateCounts:
        def tally(rows: list[Outcome], refused: bool) -> tuple[int, int]:
            return sum(o.answered != refused for o in rows), len(rows)

        def kind(name: str) -> list[Outcome]:
            return [o for o in outcomes if o.kind == name]

        return GateCounts(
            unrelated=tally(kind("unrelated"), True),
            near_miss=tally(kind("near_miss"), True),
            answerable=tally(kind("answerable"), False),
            should_answer=tally([o for o in outcomes if o.should_answer], False),
            should_refuse=tally([o for o in outcomes if not o.should_answer], True),
        )

    def __add__(self, other: GateCounts) -> GateCounts:
        def add(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
            return a[0] + b[0], a[1] + b[1]

        return GateCounts(
            add(self.unrelated, other.unrelated),
            add(self.near_miss, other.near_miss),
            add(self.answerable, other.answerable),
            add(self.should_answer, other.should_answer),
            add(self.should_refuse, other.should_refuse),
        )

    @property
    def balanced_accuracy(self) -> float | None:
        (a, n), (r, m) = self.should_answer, self.should_refuse
        return None if not n or not m else (a / n + r / m) / 2

    def cells(self, interval: bool = True) -> str:
        accuracy = self.balanced_accuracy
        return " | ".join(
            [
                share_cell(*self.unrelated, interval),
                share_cell(*self.near_miss, interval),
                share_cell(*self.answerable, interval),
                "–" if accuracy is None else f"{accuracy:.2f}",
            ]
        )


EMPTY = GateCounts((0, 0), (0, 0), (0, 0), (0, 0), (0, 0))
HEADER = (
    "| {first} | split | n | mode | off-topic refused | near-miss refused "
    "| covered answered | balanced accuracy |{extra}\n"
    "|---|---|---:|---|---|---|---|---:|{rule}"
)


def measure(site_dir: Path, mode: str, questions: Sequence[EvalQuestion]) -> tuple[list[Outcome], float]:
    """Every question as one turn in ``mode``; the outcomes and the calibrated threshold."""
    runtime = evaluation_runtime(site_dir, "lexical" if mode == "lexical" else "bundle")
    site = runtime.sites[0]
    threshold = site.gate_params(site.mode).threshold
    return evaluate(runtime, questions).outcomes, threshold


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
    parser.add_argument("--sites", type=Path, help="build into (and reuse) this folder")
    parser.add_argument("--misses", action="store_true", help="list every wrong outcome (tune)")
    args = parser.parse_args(argv)
    corpora = args.corpus or (["httpx"] if args.smoke else list(CORPORA))
    splits = args.split or (["tune"] if args.smoke else list(SPLITS))
    # The smoke builds without an embedder (seconds, not a minute); its mode is lexical.
    embedder = "none" if args.smoke else None
    modes = ("lexical",) if args.smoke else MODES
    print(f"# bench_gate: {dt.date.today().isoformat()}, tree {tree_state()}\n")
    print("Shares with their 95 % Wilson interval and counts.\n")
    print(HEADER.format(first="corpus", extra=" threshold |", rule="---:|"))
    pooled: dict[tuple[str, str, str], GateCounts] = {}
    misses: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-gate-") as tmp:
        workdir = args.sites or Path(tmp)
        for corpus in corpora:
            site_dir = build(corpus, embedder, workdir, args.sites is not None)
            for split in splits:
                every = load_questions(DEVSETS / corpus / f"{split}.jsonl")
                if args.smoke:
                    every = smoke_questions(every)
                for mode in modes:
                    outcomes, threshold = measure(site_dir, mode, every)
                    counts = GateCounts.of(outcomes)
                    key = (group_of(corpus), split, mode)
                    pooled[key] = pooled.get(key, EMPTY) + counts
                    print(
                        f"| {corpus} | {split} | {len(outcomes)} | {mode} | {counts.cells()} "
                        f"| {threshold:.2f} |",
                        flush=True,
                    )
                    if args.misses and split == "tune":
                        misses += [
                            f"{corpus} {mode} {o.kind}: {o.question[:90]!r}"
                            for o in outcomes
                            if o.answered != o.should_answer and o.kind != "after_refusal"
                        ]
    print("\nPooled over each group's halves (real sets and hand-written sets apart):\n")
    print(HEADER.format(first="sets", extra="", rule=""))
    for (group, split, mode), counts in sorted(pooled.items()):
        n = counts.should_answer[1] + counts.should_refuse[1]
        print(f"| {group} | {split} | {n} | {mode} | {counts.cells()} |")
    if misses:
        print("\nWrong outcomes on the tune halves:\n")
        print("\n".join(f"- {m}" for m in misses))


if __name__ == "__main__":
    main()
