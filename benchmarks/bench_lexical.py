"""Retrieval on real questions: DocPilot's lexical (and hybrid) mode beside a plain BM25.

Builds each dev-set corpus (benchmarks/devsets/README.md) with the DocPilot plugin, once
with ``embedder: none`` (lexical mode, what static mode gets) and, unless ``--lexical-only``,
once with the default embedder (hybrid). Every answerable question of each half is asked
as a real turn (``evaluation.evaluate``), with and without the pasted ``context``; the
same questions go to a plain BM25 baseline over the same units: bm25s, method "lucene",
k1 1.2, b 0.75, English stop words, page and section titles prepended to each unit's
text, ranked units read as distinct pages. Prints page recall@1/@5 and MRR per corpus,
split and mode, and the gate's balanced accuracy over every question of the half.

    .venv/bin/python benchmarks/bench_lexical.py            # the full table
    .venv/bin/python benchmarks/bench_lexical.py --smoke    # one corpus, a few questions

Needs the ``bench`` extra (bm25s).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from docpilot_runtime.bundle.read import load_bundle
from docpilot_runtime.evaluate.questions import EvalQuestion, load_questions
from docpilot_runtime.evaluate.run import evaluate
from docpilot_runtime.turn import load_runtime

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import tree_state
from devset_harness import Figures

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEVSETS = HERE / "devsets"
CORPORA = ("example-site", "httpx", "starlette", "uvicorn")
SPLITS = ("tune", "test")


def corpus_config(corpus: str) -> Path:
    return (
        ROOT / "example-site" / "mkdocs.yml"
        if corpus == "example-site"
        else (HERE / "corpora" / corpus / "mkdocs.yml")
    )


def plugin_config(corpus: str, embedder: str | None, workdir: Path) -> Path:
    """The corpus's mkdocs.yml with the DocPilot plugin on (``embedder`` None: default)."""
    source = corpus_config(corpus)
    text = source.read_text(encoding="utf-8")
    option = f"embedder: {embedder}" if embedder else "{}"
    if corpus == "example-site":
        marker = "  - docpilot:\n"
        replacement = marker + (f"      {option}\n" if embedder else "")
    else:
        marker = "plugins:\n- search\n"
        replacement = marker + (f"- docpilot:\n    {option}\n" if embedder else "- docpilot\n")
    if text.count(marker) != 1 or text.count("docs_dir: docs\n") != 1:
        raise SystemExit(f"{source} changed shape: update plugin_config()")
    text = text.replace(marker, replacement)
    text = text.replace("docs_dir: docs\n", f"docs_dir: {source.parent / 'docs'}\n")
    path = workdir / f"{corpus}-{embedder or 'default'}" / "mkdocs.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def build(corpus: str, embedder: str | None, workdir: Path, reuse: bool = False) -> Path:
    """Build the corpus under ``workdir`` (``reuse``: keep a bundle an earlier run built
    there with this same tree)."""
    config = plugin_config(corpus, embedder, workdir)
    site_dir = config.parent / "site"
    if reuse and (site_dir / "docpilot" / "bundle.msgpack").is_file():
        return site_dir
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    command = [sys.executable, "-m", "mkdocs", "build", "-q", "-f", str(config)]
    done = subprocess.run(
        [*command, "--site-dir", str(site_dir)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise SystemExit(f"mkdocs build -f {config} failed:\n{done.stderr[-3000:]}")
    return site_dir


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


def run_turns(site_dir: Path, questions: Sequence[EvalQuestion], with_context: bool) -> Figures:
    report = evaluate(load_runtime(site_dir), questions, with_context=with_context)
    return Figures.of([o.rank for o in report.outcomes])


def gate_accuracy(site_dir: Path, questions: Sequence[EvalQuestion]) -> float | None:
    return evaluate(load_runtime(site_dir), questions).balanced_accuracy


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="one corpus, a few questions")
    parser.add_argument("--lexical-only", action="store_true", help="skip the hybrid builds")
    parser.add_argument("--corpus", action="append", choices=CORPORA, help="repeatable")
    parser.add_argument("--split", action="append", choices=SPLITS, help="repeatable")
    parser.add_argument("--sites", type=Path, help="build into (and reuse) this folder")
    args = parser.parse_args(argv)
    corpora = args.corpus or (["httpx"] if args.smoke else list(CORPORA))
    splits = args.split or (["tune"] if args.smoke else list(SPLITS))
    modes: list[tuple[str, str | None]] = [("lexical", "none")]
    if not (args.lexical_only or args.smoke):
        modes.append(("hybrid", None))
    print(f"# bench_lexical: {dt.date.today().isoformat()}, tree {tree_state()}\n")
    header = (
        "| corpus | split | n | ctx | mode | R@1 | R@5 | MRR |\n"
        "|---|---|---:|---|---|---:|---:|---:|"
    )
    rows: list[str] = []
    gates: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-lexical-") as tmp:
        workdir = args.sites or Path(tmp)
        sites = {(c, m): build(c, e, workdir, args.sites is not None) for c in corpora for m, e in modes}
        for corpus in corpora:
            baseline = PlainBm25(sites[(corpus, "lexical")])
            for split in splits:
                every = load_questions(DEVSETS / corpus / f"{split}.jsonl")
                answerable = [q for q in every if q.kind == "answerable"]
                if args.smoke:
                    refuse = [q for q in every if not q.should_answer]
                    answerable = answerable[:6] + [q for q in answerable if q.context][:2]
                    every = answerable + refuse[:4]
                for with_context in (False, True):
                    asked = answerable
                    if with_context:
                        asked = [q for q in answerable if q.context]
                        if not asked:
                            continue
                    ctx = "with" if with_context else "without"
                    lead = f"| {corpus} | {split} | {len(asked)} | {ctx} |"
                    for mode, _ in modes:
                        figures = run_turns(sites[(corpus, mode)], asked, with_context)
                        rows.append(f"{lead} {mode} | {figures.cells()} |")
                    bm25 = Figures.of(
                        [baseline.rank(text_of(q, with_context), q.expect_pages) for q in asked]
                    )
                    rows.append(f"{lead} plain BM25 (bm25s) | {bm25.cells()} |")
                for mode, _ in modes:
                    accuracy = gate_accuracy(sites[(corpus, mode)], every)
                    shown = "–" if accuracy is None else f"{accuracy:.2f}"
                    gates.append(f"| {corpus} | {split} | {len(every)} | {mode} | {shown} |")
    print(header)
    print("\n".join(rows))
    print("\n| corpus | split | n | mode | gate balanced accuracy |\n|---|---|---:|---|---:|")
    print("\n".join(gates))


if __name__ == "__main__":
    main()
