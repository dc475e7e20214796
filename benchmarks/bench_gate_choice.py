"""How the gate's weights and threshold rule are chosen, and the most any choice can do.

Builds each dev-set corpus with the DocPilot plugin and its default embedder, and reads,
through the product's own search (``Site.search``), the gate signals (``bundle.schema
.Signals``) of every first-turn ``answerable``, ``near_miss`` and ``unrelated`` question of
the **tune** halves, and of the build's calibration probes (``index.calibrate``: covered,
word salads, off-topic). Then, per mode (hybrid; lexical = static mode), it scores every
weighting of the signals (each weight 0-3) under every threshold rule (a quantile of one
probe set's gate scores, clamped as ``RetrievalParams.threshold_range`` clamps it), with the
anchors the build computes (``gate.calibrate_mode``: medians of the covered and uncovered
probes, at least ``min_span`` apart) and the same clipped positions (``gate.gate_score``),
and prints, pooled over the real sets' tune halves:

* the current weights and rule, and each rule with the current weights;
* the choice that refuses the most off-topic questions (then near-misses) while answering
  at least 0.95, 0.90 and 0.85 of the covered ones, among those that still refuse at least
  0.9 of the hand-written sets' off-topic questions (everyday subjects, the clearly
  off-topic kind): the ceiling of this gate's family on these questions, in sample (so
  optimistic);
* per corpus, the chosen weighting at 0.95, on the tune halves of every set (real and
  hand-written).

It never reads a test half: the choice is then measured once with ``bench_gate.py``.

    .venv/bin/python benchmarks/bench_gate_choice.py --sites benchmarks/out/quality
    .venv/bin/python benchmarks/bench_gate_choice.py --smoke   # httpx, lexical, coarse grid
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from docpilot_runtime.bundle.read import load_bundle
from docpilot_runtime.evaluate.questions import load_questions
from docpilot_runtime.evaluate.run import lexical_site
from docpilot_runtime.index.calibrate import probe_sets
from docpilot_runtime.retrieve.params import DEFAULT_PARAMS
from docpilot_runtime.retrieve.site import Site
from docpilot_runtime.sites.loader import site_from_bundle

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import tree_state
from corpus_sites import CORPORA, DEVSETS, REAL, build

SIGNALS = {
    "hybrid": ("lexical_strength", "lexical_margin", "lexical_coverage", "known_share",
               "names_known", "dense_strength", "dense_margin"),
    "lexical": ("lexical_strength", "lexical_margin", "lexical_coverage", "known_share",
                "names_known"),
}
KINDS = ("answerable", "near_miss", "unrelated")
QUANTILES = {
    "salads": (0.0, 0.05, 0.1, 0.25),
    "off_topic": (0.5, 0.8, 0.9, 0.95, 1.0),
    "covered": (0.01, 0.02, 0.05),
    "other_tool": (0.25, 0.5, 0.75, 0.9, 1.0),
    "other_error": (0.25, 0.5, 0.75, 0.9, 1.0),
    "missing_option": (0.25, 0.5, 0.75, 0.9, 1.0),
}
FLOORS = (0.95, 0.90, 0.85)
# The hand-written sets' off-topic questions are the clearly off-topic kind (everyday
# subjects, other stacks): a choice must keep refusing them on their tune halves.
CLEAR_OFF_TOPIC = 0.9


@dataclass(frozen=True)
class Corpus:
    """One corpus in one mode: each question set's signals as rows (one column a signal)."""

    name: str
    sets: dict[str, np.ndarray]

    def positions(self, names: Sequence[str]) -> dict[str, np.ndarray]:
        """Each set's clipped positions between the anchors the build would compute."""
        p = DEFAULT_PARAMS
        uncovered = np.vstack([self.sets["off_topic"], self.sets["salads"]])
        low = np.median(uncovered, axis=0)
        spans = np.array([p.min_span[n] for n in names])
        high = np.maximum(np.median(self.sets["covered"], axis=0), low + spans)
        for i, name in enumerate(names):
            if name in p.fixed_anchors:
                low[i], high[i] = p.fixed_anchors[name]
        span = np.where(high - low > 1e-9, high - low, 1e-9)
        return {k: np.clip((v - low) / span, p.clip_low, p.clip_high) for k, v in self.sets.items()}


def signals_of(site: Site, texts: Sequence[str], names: Sequence[str]) -> np.ndarray:
    rows = [[site.search(t).signals.get(n) for n in names] for t in texts]
    return np.array(rows, dtype=float).reshape(len(texts), len(names))


def corpus_rows(corpus: str, site_dir: Path, mode: str, smoke: bool) -> Corpus:
    hybrid = site_from_bundle(load_bundle(site_dir))
    site = hybrid if mode == "hybrid" else lexical_site(hybrid)
    questions = [q for q in load_questions(DEVSETS / corpus / "tune.jsonl") if not q.history]
    texts = {kind: [q.question for q in questions if q.kind == kind] for kind in KINDS}
    texts.update(probe_sets(site.bundle.units, site.searcher.lexical))
    if smoke:
        texts = {k: v[:12] for k, v in texts.items()}
    names = SIGNALS[mode]
    return Corpus(corpus, {k: signals_of(site, v, names) for k, v in texts.items()})


@dataclass(frozen=True)
class Outcome:
    """Counts of one weighting and rule over some corpora."""

    answered: tuple[int, int]
    off_topic: tuple[int, int]  # refused, asked
    near_miss: tuple[int, int]

    def shares(self) -> tuple[float, float, float]:
        def share(pair: tuple[int, int]) -> float:
            return pair[0] / pair[1] if pair[1] else 0.0

        return share(self.answered), share(self.off_topic), share(self.near_miss)

    def cells(self) -> str:
        return " | ".join(f"{x:.2f}" for x in self.shares())


def judge_many(
    positions: dict[str, dict[str, np.ndarray]], weights: np.ndarray, rule: tuple[str, float],
    corpora: Sequence[str],
) -> dict[str, np.ndarray]:
    """Per kind, (hits, asked) of every weighting at once (``weights``: one per column,
    normalised here): answered for ``answerable``, refused for the others."""
    w = weights / weights.sum(axis=0, keepdims=True)
    low_cut, high_cut = DEFAULT_PARAMS.threshold_range
    hits = {k: np.zeros(w.shape[1]) for k in KINDS}
    asked = dict.fromkeys(KINDS, 0)
    for name in corpora:
        pos = positions[name]
        reference = pos[rule[0]] if len(pos[rule[0]]) else pos["off_topic"]
        threshold = np.clip(np.quantile(reference @ w, rule[1], axis=0), low_cut, high_cut)
        for kind in KINDS:
            passed = pos[kind] @ w >= threshold
            hits[kind] += passed.sum(axis=0) if kind == "answerable" else (~passed).sum(axis=0)
            asked[kind] += len(passed)
    return {k: np.stack([hits[k], np.full(w.shape[1], asked[k])]) for k in KINDS}


def judge(
    positions: dict[str, dict[str, np.ndarray]], weights: np.ndarray, rule: tuple[str, float],
    corpora: Sequence[str],
) -> Outcome:
    """What the gate does with ``weights`` and ``rule`` on ``corpora``."""
    found = judge_many(positions, weights.reshape(-1, 1), rule, corpora)

    def pair(kind: str) -> tuple[int, int]:
        return int(found[kind][0, 0]), int(found[kind][1, 0])

    return Outcome(pair("answerable"), pair("unrelated"), pair("near_miss"))


def describe(names: Sequence[str], weights: Sequence[float]) -> str:
    return ", ".join(f"{n} {int(w)}" for n, w in zip(names, weights, strict=True) if w)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="httpx, lexical, coarse grid")
    parser.add_argument("--sites", type=Path, help="build into (and reuse) this folder")
    args = parser.parse_args(argv)
    corpora = ["httpx"] if args.smoke else list(CORPORA)
    real = corpora if args.smoke else list(REAL)
    modes = ("lexical",) if args.smoke else ("hybrid", "lexical")
    print(f"# bench_gate_choice: {dt.date.today().isoformat()}, tree {tree_state()}\n")
    with tempfile.TemporaryDirectory(prefix="bench-gate-choice-") as tmp:
        workdir = args.sites or Path(tmp)
        sites = {c: build(c, "none" if args.smoke else None, workdir, args.sites is not None)
                 for c in corpora}
        for mode in modes:
            names = SIGNALS[mode]
            rows = {c: corpus_rows(c, sites[c], mode, args.smoke) for c in corpora}
            positions = {c: rows[c].positions(names) for c in corpora}
            current_w = np.array([DEFAULT_PARAMS.gate_weights[mode].get(n, 0.0) for n in names])
            current_rule = DEFAULT_PARAMS.gate_threshold[mode]
            rules = [(probe, q) for probe, qs in QUANTILES.items() for q in qs]
            print(f"## {mode}: real sets' tune halves, pooled\n")
            if "names_known" in names:
                column = names.index("names_known")
                shares = []
                for kind in KINDS:
                    unknown = sum(int((rows[c].sets[kind][:, column] == 0).sum()) for c in real)
                    asked = sum(len(rows[c].sets[kind]) for c in real)
                    shares.append(f"{kind} {unknown}/{asked}")
                print("Questions naming something no unit names (names_known 0): "
                      + ", ".join(shares) + "\n")
            print("| weights | threshold rule | covered answered | off-topic refused "
                  "| near-miss refused |\n|---|---|---:|---:|---:|")
            shown = ", ".join(f"{n} {w:.3g}" for n, w in zip(names, current_w, strict=True) if w)
            print(f"| current ({shown}) | {current_rule[0]} {current_rule[1]} "
                  f"| {judge(positions, current_w, current_rule, real).cells()} |")
            for rule in rules:
                print(f"| current | {rule[0]} {rule[1]} "
                      f"| {judge(positions, current_w, rule, real).cells()} |")
            levels = (0, 1, 3) if args.smoke else (0, 1, 2, 3)
            combos = np.array(
                [c for c in itertools.product(levels, repeat=len(names)) if any(c)], dtype=float
            )
            trials = []
            hand = [c for c in corpora if c not in real]
            for rule in rules:
                found = judge_many(positions, combos.T, rule, real)
                clear = judge_many(positions, combos.T, rule, hand)["unrelated"] if hand else None
                for i, combo in enumerate(combos):
                    if clear is not None and clear[0, i] < CLEAR_OFF_TOPIC * clear[1, i]:
                        continue
                    outcome = Outcome(
                        *(
                            (int(found[k][0, i]), int(found[k][1, i]))
                            for k in ("answerable", "unrelated", "near_miss")
                        )
                    )
                    trials.append((outcome, tuple(combo), rule))
            print(f"\n{len(combos) * len(rules)} weightings x rules scored, {len(trials)} "
                  f"keep refusing at least {CLEAR_OFF_TOPIC} of the hand-written sets' (clearly) "
                  "off-topic questions. The best of those at each floor of covered answered "
                  "(most off-topic refused, then near-misses):\n")
            print("| floor | weights | threshold rule | covered answered | off-topic refused "
                  "| near-miss refused |\n|---|---|---|---:|---:|---:|")
            chosen = None
            for floor in FLOORS:
                ok = [t for t in trials if t[0].shares()[0] >= floor]
                if not ok:
                    print(f"| {floor} | none reaches it | | | | |")
                    continue
                best = max(ok, key=lambda t: (t[0].shares()[1], t[0].shares()[2],
                                              t[0].shares()[0], -sum(t[1])))
                chosen = chosen or best
                print(f"| {floor} | {describe(names, best[1])} | {best[2][0]} {best[2][1]} "
                      f"| {best[0].cells()} |")
            if chosen is not None:
                print(f"\nPer corpus, tune halves, the choice at the first floor "
                      f"({describe(names, chosen[1])}; {chosen[2][0]} {chosen[2][1]}) "
                      "beside the current weights and rule:\n")
                print("| corpus | covered answered | off-topic refused | near-miss refused "
                      "| current: covered | off-topic | near-miss |\n"
                      "|---|---:|---:|---:|---:|---:|---:|")
                for c in corpora:
                    new = judge(positions, np.array(chosen[1], float), chosen[2], [c])
                    old = judge(positions, current_w, current_rule, [c])
                    print(f"| {c} | {new.cells()} | {old.cells()} |")
            print()


if __name__ == "__main__":
    main()
