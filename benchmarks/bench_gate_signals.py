"""How well does each gate signal, and each candidate one, tell covered questions from
near-misses? A per-signal view of the refusal gate, on the dev sets' tune halves only.

Builds each dev-set corpus (benchmarks/devsets/README.md) with the DocPilot plugin and its
default embedder, runs every first-turn ``answerable`` and ``near_miss`` question of the
*tune* half through the site's search (hybrid, and lexical: the same bundle without its
dense channel), and prints, per corpus and mode, each signal's AUC: the chance that a
random answerable question scores above a random near-miss (0.5: no separation; ties
count half). Beside it, the same AUC between the calibration's covered probes and its
word salads (``index.calibrate``), which is all a signal's anchors can see at build time.

Signals: the six the gate reads (``gate.Signals``) and four candidates computed here only,
none in the runtime:

* ``proximity``: the idf-weighted share (each pair weighs the smaller idf of its terms) of
  the question's adjacent content-term pairs whose terms stand within 5 tokens of each
  other in one unit, the best of the 5 best units. A near-miss tends to match its words
  apart ("rate" here, "limit" there).
* ``rarest_held``: the share of the idf of the question's two rarest content terms (an
  unseen term at the highest idf) that the best unit holds.
* ``page_coverage``: ``lexical_coverage`` against the best unit's whole page.
* ``agreement`` (hybrid): 1 when the lexical list's best unit is on the dense list's best
  unit's page.
* ``sentence_cosine`` (hybrid): the highest cosine between the question's embedding and one
  sentence's (each embedded with the same embedder, at query time) among the 3 best units:
  whether one sentence says what the question asks, rather than the unit as a whole.

    .venv/bin/python benchmarks/bench_gate_signals.py
    .venv/bin/python benchmarks/bench_gate_signals.py --workdir /tmp/gate-sites --reuse
    .venv/bin/python benchmarks/bench_gate_signals.py --smoke   # httpx, lexical, no embedder

It never reads a test half: choose on the tune halves, then measure the test halves once
with ``bench_gate.py``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import re
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from docpilot_runtime.evaluate.questions import load_questions
from docpilot_runtime.evaluate.run import evaluation_runtime
from docpilot_runtime.index.calibrate import covered_probes, salad_probes
from docpilot_runtime.retrieve.lexical import idf
from docpilot_runtime.retrieve.search import Ranking, Searcher, coverage_signals, unit_terms
from docpilot_runtime.retrieve.tokenize import search_term_counts, search_terms, tokenize

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import tree_state
from corpus_sites import CORPORA, DEVSETS, build

GATE_SIGNALS = (
    "lexical_strength",
    "lexical_margin",
    "dense_strength",
    "dense_margin",
    "lexical_coverage",
    "known_share",
)
CANDIDATES = ("proximity", "rarest_held", "page_coverage", "agreement", "sentence_cosine")
DENSE_ONLY = ("dense_strength", "dense_margin", "agreement", "sentence_cosine")
WINDOW = 5
PROXIMITY_UNITS = 5


def auc(positive: Sequence[float], negative: Sequence[float]) -> float | None:
    """P(a positive scores above a negative), ties counting half."""
    if not positive or not negative:
        return None
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in positive for n in negative)
    return wins / (len(positive) * len(negative))


class Candidates:
    """The candidate signals of one site's searcher (see the module docstring)."""

    def __init__(self, searcher: Searcher) -> None:
        self.searcher = searcher
        self.lexical = searcher.lexical
        units = searcher.units
        self.tokens = [tokenize(f"{u.title}\n{' '.join(u.breadcrumb)}\n{u.text}") for u in units]
        pages: dict[int, set[str]] = {}
        for unit in units:
            pages.setdefault(unit.page, set()).update(unit_terms(unit))
        self.page_terms = {page: frozenset(terms) for page, terms in pages.items()}
        self.sentences: dict[int, np.ndarray] = {}

    def idf(self, term: str) -> float:
        return idf(self.lexical.count, self.lexical.document_frequency(term))

    def proximity(self, text: str, order: Sequence[int]) -> float:
        # The question's search terms in order, repeats kept (function words and
        # compounds dropped).
        searched = search_term_counts(text)
        sequence = [t for t in tokenize(text) if t in searched]
        pairs = list(dict.fromkeys((a, b) for a, b in itertools.pairwise(sequence) if a != b))
        if not order:
            return 0.0
        if not pairs:
            return 1.0 if sequence and sequence[0] in self.tokens[order[0]] else 0.0
        weights = {pair: min(self.idf(pair[0]), self.idf(pair[1])) for pair in pairs}
        total = sum(weights.values())
        best = 0.0
        for unit in order[:PROXIMITY_UNITS]:
            positions: dict[str, list[int]] = {}
            for n, token in enumerate(self.tokens[unit]):
                positions.setdefault(token, []).append(n)
            held = sum(
                w
                for (a, b), w in weights.items()
                if any(
                    abs(i - j) <= WINDOW for i in positions.get(a, ()) for j in positions.get(b, ())
                )
            )
            best = max(best, held / total if total else 0.0)
        return best

    def rarest_held(self, text: str, order: Sequence[int]) -> float:
        terms = search_terms(text)
        rarest = sorted(terms, key=lambda t: (-self.idf(t), t))[:2]
        if not rarest or not order:
            return 0.0
        best = set(self.tokens[order[0]])
        return sum(self.idf(t) for t in rarest if t in best) / sum(self.idf(t) for t in rarest)

    def page_coverage(self, text: str, order: Sequence[int]) -> float:
        if not order:
            return 0.0
        page = self.searcher.units[order[0]].page
        return coverage_signals(self.lexical, search_terms(text), self.page_terms[page])[0]

    def sentence_cosine(self, text: str, order: Sequence[int]) -> float:
        dense = self.searcher.dense
        query = dense.embed(text) if dense is not None else None
        if query is None or not order:
            return 0.0
        best = -1.0
        for unit in order[:3]:
            if unit not in self.sentences:
                record = self.searcher.units[unit]
                parts = [p.strip() for p in re.split(r"(?<=[.!?])\s+|\n+", record.text)]
                parts = [p for p in parts if len(p) > 15] or [record.title]
                vectors = np.array([dense.embed(p) for p in parts], dtype=np.float32)
                norms = np.linalg.norm(vectors, axis=1, keepdims=True) + 1e-9
                self.sentences[unit] = vectors / norms
            vector = np.asarray(query, dtype=np.float32)
            vector = vector / (np.linalg.norm(vector) + 1e-9)
            best = max(best, float((self.sentences[unit] @ vector).max()))
        return best

    def agreement(self, ranking: Ranking) -> float:
        if not ranking.lexical or not ranking.dense:
            return 0.0
        pages = self.searcher.unit_pages
        return float(pages[ranking.lexical[0][0]] == pages[ranking.dense[0][0]])


def site_rows(
    corpus: str, site_dir: Path, mode: str, smoke: bool
) -> dict[str, list[dict[str, float]]]:
    """Every signal of every tune question and probe, by set."""
    runtime = evaluation_runtime(site_dir, "lexical" if mode == "lexical" else "bundle")
    site = runtime.sites[0]
    searcher = site.searcher
    candidates = Candidates(searcher)
    every = load_questions(DEVSETS / corpus / "tune.jsonl")
    sets = {
        kind: [q.question for q in every if q.kind == kind and not q.history]
        for kind in ("answerable", "near_miss")
    }
    sets["covered probes"] = covered_probes(searcher.units, searcher.lexical)
    sets["word salads"] = salad_probes(searcher.units, searcher.lexical)
    if smoke:
        sets = {name: texts[:5] for name, texts in sets.items()}
    measures: dict[str, Callable[[str, Ranking], float]] = {
        "proximity": lambda text, r: candidates.proximity(text, r.order),
        "rarest_held": lambda text, r: candidates.rarest_held(text, r.order),
        "page_coverage": lambda text, r: candidates.page_coverage(text, r.order),
        "agreement": lambda _text, r: candidates.agreement(r),
        "sentence_cosine": lambda text, r: candidates.sentence_cosine(text, r.order),
    }
    rows: dict[str, list[dict[str, float]]] = {}
    for name, texts in sets.items():
        rows[name] = []
        for text in texts:
            ranking = site.search(text)
            row = {s: ranking.signals.get(s) for s in GATE_SIGNALS}
            row.update({c: measure(text, ranking) for c, measure in measures.items()})
            rows[name].append(row)
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="httpx, lexical, 5 of each set")
    parser.add_argument("--corpus", action="append", choices=CORPORA, help="repeatable")
    parser.add_argument("--workdir", type=Path, help="build the sites here (default: a temp dir)")
    parser.add_argument("--reuse", action="store_true", help="keep sites built in --workdir")
    args = parser.parse_args(argv)
    corpora = args.corpus or (["httpx"] if args.smoke else list(CORPORA))
    embedder = "none" if args.smoke else None
    modes = ("lexical",) if args.smoke else ("hybrid", "lexical")
    names = [*GATE_SIGNALS, *CANDIDATES]
    print(f"# bench_gate_signals: {dt.date.today().isoformat()}, tree {tree_state()}\n")
    print("AUC, answerable over near-miss (tune half); in brackets covered probes over salads.\n")
    print("| corpus | mode | " + " | ".join(names) + " |\n|---|---|" + "---:|" * len(names))
    with tempfile.TemporaryDirectory(prefix="bench-gate-signals-") as tmp:
        workdir = args.workdir or Path(tmp)
        for corpus in corpora:
            site_dir = build(corpus, embedder, workdir, reuse=args.reuse)
            for mode in modes:
                rows = site_rows(corpus, site_dir, mode, args.smoke)
                cells = []
                for name in names:
                    if mode == "lexical" and name in DENSE_ONLY:
                        cells.append("–")
                        continue
                    values = {k: [r[name] for r in v] for k, v in rows.items()}
                    real = auc(values["answerable"], values["near_miss"])
                    probes = auc(values["covered probes"], values["word salads"])
                    show = "–" if real is None else f"{real:.2f}"
                    cells.append(f"{show} ({'–' if probes is None else f'{probes:.2f}'})")
                print(f"| {corpus} | {mode} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
