"""Retrieval on real questions: DocPilot's lexical (and hybrid) mode beside a plain BM25.

Builds each dev-set corpus (benchmarks/devsets/README.md; the real-thread sets first, then
the hand-written ones) once with the DocPilot plugin and its default embedder. Every
answerable question of each half is asked as a real turn (``evaluation.evaluate``), in
hybrid mode and in lexical mode (the same bundle without its dense channel: what static
mode runs; ``--lexical-only`` builds with ``embedder: none`` and skips hybrid), with and
without the pasted ``context``; the
same questions go to a plain BM25 baseline over the same units: bm25s, method "lucene",
k1 1.2, b 0.75, English stop words, page and section titles prepended to each unit's
text, ranked units read as distinct pages. Prints page recall@1, recall@5 (with its 95 %
Wilson interval and counts) and MRR per corpus, split and mode, then the same pooled over
the real sets' halves and over the hand-written ones' (never the two together). The gate's
figures are ``bench_gate.py``'s.

    .venv/bin/python benchmarks/bench_lexical.py            # the full table
    .venv/bin/python benchmarks/bench_lexical.py --smoke    # one corpus, a few questions

Needs the ``bench`` extra (bm25s).
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from docpilot_runtime.bundle.read import load_bundle
from docpilot_runtime.evaluate.questions import EvalQuestion, load_questions
from docpilot_runtime.evaluate.run import evaluate, evaluation_runtime

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import share_cell, tree_state
from corpus_sites import CORPORA, DEVSETS, SPLITS, build, group_of
from devset_harness import Figures


class PlainBm25:
    """The baseline: bm25s over the bundle's units, titles prepended to the text."""

    def __init__(self, site_dir: Path) -> None:
        import bm25s

        self.bm25s = bm25s
        bundle = load_bundle(site_dir)
        self.pages = ["/" + bundle.pages[u.page].url.lstrip("/") for u in bundle.units]
        corpus = [f"{bundle.pages[u.page].title}\n{u.title}\n{u.text}" for u in bundle.units]
        self.retriever = bm25s.BM25(method="lucene", k1=1.2, b=0.75)
        tokens = bm25s.tokenize(corpus, stopwords="en", show_progress=False)
        self.retriever.index(tokens, show_progress=False)
        self.count = len(corpus)

    def rank(self, text: str, expect: Sequence[str]) -> int | None:
        tokens = self.bm25s.tokenize([text], stopwords="en", show_progress=False)
        if not tokens.vocab:
            return None
        k = min(self.count, 100)
        docs, scores = self.retriever.retrieve(tokens, k=k, show_progress=False)
        pages: list[str] = []
        for doc, score in zip(docs[0], scores[0], strict=True):
            if score <= 0:
                break
            page = self.pages[int(doc)]
            if page not in pages:
                pages.append(page)
        wanted = {"/" + p.lstrip("/") for p in expect}
        return next((i + 1 for i, p in enumerate(pages) if p in wanted), None)


def text_of(question: EvalQuestion, with_context: bool) -> str:
    return question.request(with_context).question


def run_turns(site_dir: Path, mode: str, questions: Sequence[EvalQuestion], with_context: bool) -> list[int | None]:
    """The expected page's rank in each question's turn (None: not among the ranked pages)."""
    runtime = evaluation_runtime(site_dir, "lexical" if mode == "lexical" else "bundle")
    report = evaluate(runtime, questions, with_context=with_context)
    return [o.rank for o in report.outcomes]


def recall_cells(ranks: Sequence[int | None]) -> str:
    """R@1, R@5 with its 95 % interval and counts, MRR."""
    figures = Figures.of(ranks)
    hits5 = sum(r is not None and r <= 5 for r in ranks)
    return f"{figures.r1:.2f} | {share_cell(hits5, len(ranks))} | {figures.mrr:.2f}"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="one corpus, a few questions")
    parser.add_argument("--lexical-only", action="store_true", help="build without an embedder")
    parser.add_argument("--corpus", action="append", choices=CORPORA, help="repeatable")
    parser.add_argument("--split", action="append", choices=SPLITS, help="repeatable")
    parser.add_argument("--sites", type=Path, help="build into (and reuse) this folder")
    args = parser.parse_args(argv)
    corpora = args.corpus or (["httpx"] if args.smoke else list(CORPORA))
    splits = args.split or (["tune"] if args.smoke else list(SPLITS))
    lexical_only = args.lexical_only or args.smoke
    modes = ["lexical"] if lexical_only else ["lexical", "hybrid"]
    embedder = "none" if lexical_only else None
    print(f"# bench_lexical: {dt.date.today().isoformat()}, tree {tree_state()}\n")
    header = (
        "| {first} | split | n | ctx | mode | R@1 | R@5 [95 %] (hits/n) | MRR |\n"
        "|---|---|---:|---|---|---:|---|---:|"
    )
    print(header.format(first="corpus"))
    pooled: dict[tuple[str, str, str, str], list[int | None]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-lexical-") as tmp:
        workdir = args.sites or Path(tmp)
        for corpus in corpora:
            site_dir = build(corpus, embedder, workdir, args.sites is not None)
            baseline = PlainBm25(site_dir)
            for split in splits:
                every = load_questions(DEVSETS / corpus / f"{split}.jsonl")
                answerable = [q for q in every if q.kind == "answerable"]
                if args.smoke:
                    answerable = answerable[:6] + [q for q in answerable if q.context][:2]
                for with_context in (False, True):
                    asked = answerable
                    if with_context:
                        asked = [q for q in answerable if q.context]
                        if not asked:
                            continue
                    ctx = "with" if with_context else "without"
                    lead = f"| {corpus} | {split} | {len(asked)} | {ctx} |"
                    ranks = {m: run_turns(site_dir, m, asked, with_context) for m in modes}
                    ranks["plain BM25 (bm25s)"] = [
                        baseline.rank(text_of(q, with_context), q.expect_pages) for q in asked
                    ]
                    for mode, found in ranks.items():
                        print(f"{lead} {mode} | {recall_cells(found)} |", flush=True)
                        key = (group_of(corpus), split, ctx, mode)
                        pooled.setdefault(key, []).extend(found)
    print("\nPooled over each group's halves (real sets and hand-written sets apart):\n")
    print(header.format(first="sets"))
    for (group, split, ctx, mode), found in sorted(pooled.items()):
        print(f"| {group} | {split} | {len(found)} | {ctx} | {mode} | {recall_cells(found)} |")


if __name__ == "__main__":
    main()
