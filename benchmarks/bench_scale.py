"""Query-time cost at scale: dense scan, BM25 and retrieval + gate on synthetic bundles.

Synthetic bundles of 1k, 10k, 100k and 1M units (``--quick``: 1k and 10k):

* vectors: 256 dims drawn as clustered gaussians (a centre per cluster, one cluster per
  ~1,000 units, at least 16, plus noise of the same scale), reduced to sign bits with
  ``dense.sign_bits`` and laid out by ``dense.pack_vectors``, as the indexer does;
* text: a Zipfian vocabulary (exponent 1.0) of 50,000 pseudo-words, ~80 tokens per unit
  (normal, sd 20, clipped to 20..200), a 3-word title and a 2-word breadcrumb shared by
  8 units; the lexical block is built with ``lexical.build_lexical``. Head words behave
  like "the" / "how": the most frequent is in nearly every unit;
* queries: 3-5 Zipf-drawn words (the stop-word part of a question) and 2-4 rarer words
  (rank >= 400) taken from one unit's text; query vectors are a cluster centre plus noise.

Measured, side by side, in one run:

(a) dense top-100 over 256-bit vectors: ours ``DenseIndex.hamming`` + ``argpartition``,
    ours ``DenseIndex.search(q, 100)`` (the same plus rescoring the 100 with the float
    query), and faiss ``IndexBinaryFlat`` pinned to one thread
    (``faiss.omp_set_num_threads(1)``: with two it stalls erratically on this VM). The
    top-100 distances are checked equal.
(b) BM25 top-50: ours ``NumpyLexical.search`` against bm25s (``BM25(method="bm25+",
    k1=1.2, b=0.7, delta=0.5)`` indexed on the same tokens, the title repeated 3 times as
    our field boost does) through ``retrieve(k=50)`` and ``get_scores`` alone; the
    pure-Python ``LexicalIndex.search`` at 1k and 10k for reference. bm25s scores every
    (term, unit) pair at index time; ours computes BM25+ at query time from stored tfs.
(c) retrieval + gate per question: ``Searcher.search(text, vector)`` then ``gate_score`` and
    ``confidence`` with ``gate.default_params("hybrid")`` (the shape of a bundle's params),
    first with the query vector precomputed, then with WordLlama's ``embed_query`` of a
    real dev-set question inside the timed call (the question embedded is an English
    question from ``devset/example-site.jsonl``; its vector is then searched against the
    synthetic vectors, which only changes which units come back, not the work).

(a) and (b) report the median per-query time over repeated warm runs cycling through 64
queries; (c) times 400 distinct queries one by one (after a warm-up pass) and reports p50
and p99, the median of 3 passes. 1M units: BM25 and (c) need ``build_lexical`` over 1M
units, which takes ~8 minutes and ~6 GB here (46 s at 100k), more than the ~5 minute
budget, so they are skipped unless ``--bm25-1m`` is given.

numpy's BLAS (the rescoring matrix-vector products) runs with whatever OPENBLAS_* the
environment sets; this script does not change them and prints what it saw.

Run: ``.venv/bin/python benchmarks/bench_scale.py [--quick | --smallest | --smoke] [--bm25-1m] [--seconds 1.5]``
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bm25s
import faiss
import numpy as np
from common import tree_state
from docpilot_runtime.bundle.schema import LexicalBlock
from docpilot_runtime.embedders import load_embedder
from docpilot_runtime.retrieve.gate import confidence, default_params, gate_score
from docpilot_runtime.retrieve.lexical import LexicalDoc, LexicalIndex, build_lexical
from docpilot_runtime.retrieve.params import DEFAULT_PARAMS
from docpilot_runtime.retrieve.search import Searcher
from docpilot_runtime.retrieve.tokenize import query_terms
from docpilot_runtime.scoring.dense import DenseChannel, DenseIndex, pack_vectors, sign_bits
from docpilot_runtime.scoring.lexical_numpy import NumpyLexical
from docpilot_runtime.settings.embedder import EmbedderSpec

HERE = Path(__file__).resolve().parent
DEVSET = HERE / "devset" / "example-site.jsonl"

SIZES = (1_000, 10_000, 100_000, 1_000_000)
QUICK_SIZES = (1_000, 10_000)
DIMS = 256
VOCABULARY = 50_000
ZIPF_EXPONENT = 1.0
MEAN_TOKENS = 80
UNITS_PER_PAGE = 8
DENSE_TOP = 100
LEXICAL_TOP = 50
TIMING_QUERIES = 64  # cycled through in (a) and (b)
GATE_QUERIES = 400  # timed one by one in (c)
GATE_PASSES = 3
PURE_PYTHON_MAX = 10_000
BM25_BUILD_MAX = 100_000  # above this build_lexical takes minutes: --bm25-1m
SEED = 20240611
# Pseudo-word syllables: word i is i written in base 20 with one syllable per digit, so
# frequent (low-rank) words are short, as in real text, and every word is distinct.
SYLLABLES = (
    "ba", "ke", "di", "mo", "lu", "sa", "te", "ri", "no", "pa",
    "go", "fe", "vi", "zu", "ha", "je", "wo", "cy", "qi", "xa",
)  # fmt: skip


def pseudo_words(count: int) -> list[str]:
    words = []
    for i in range(count):
        digits = []
        while True:
            i, digit = divmod(i, len(SYLLABLES))
            digits.append(SYLLABLES[digit])
            if i == 0:
                break
        words.append("".join(reversed(digits)))
    return words


WORDS = np.array(pseudo_words(VOCABULARY), dtype=object)
_P = 1.0 / np.arange(1, VOCABULARY + 1) ** ZIPF_EXPONENT
ZIPF_CDF = np.cumsum(_P) / _P.sum()


def zipf_ranks(rng: np.random.Generator, count: int) -> np.ndarray:
    ranks: np.ndarray = np.minimum(np.searchsorted(ZIPF_CDF, rng.random(count)), VOCABULARY - 1)
    return ranks


@dataclass
class Corpus:
    n: int
    packed: bytes  # word-major, as in a bundle
    rows: np.ndarray  # (n, 32) uint8 packed sign bits, as faiss takes them
    centres: np.ndarray  # (clusters, DIMS) float32
    titles: list[str]
    breadcrumbs: list[str]
    texts: list[str]


def make_vectors(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    clusters = max(16, n // 1000)
    centres = rng.standard_normal((clusters, DIMS), dtype=np.float32)
    rows = np.empty((n, DIMS // 8), dtype=np.uint8)
    step = 100_000  # 100 MB of floats at a time
    for start in range(0, n, step):
        stop = min(start + step, n)
        which = rng.integers(0, clusters, stop - start)
        floats = centres[which] + rng.standard_normal((stop - start, DIMS), dtype=np.float32)
        rows[start:stop] = sign_bits(floats)
    return rows, centres


def make_texts(n: int, rng: np.random.Generator) -> tuple[list[str], list[str], list[str]]:
    lengths = np.clip(rng.normal(MEAN_TOKENS, 20, n).astype(np.int64), 20, 200)
    ends = np.cumsum(lengths)
    tokens = WORDS[zipf_ranks(rng, int(ends[-1]))]
    texts = [" ".join(tokens[e - length : e]) for e, length in zip(ends, lengths, strict=True)]

    def content(k: int) -> np.ndarray:  # words of rank >= 100: no stop words in headings
        words: np.ndarray = WORDS[rng.integers(100, VOCABULARY, k)]
        return words

    titles = [" ".join(t) for t in content(3 * n).reshape(n, 3)]
    pages = -(-n // UNITS_PER_PAGE)
    crumbs = [" ".join(t) for t in content(2 * pages).reshape(pages, 2)]
    breadcrumbs = [crumbs[i // UNITS_PER_PAGE] for i in range(n)]
    return titles, breadcrumbs, texts


def make_corpus(n: int) -> Corpus:
    rng = np.random.default_rng(SEED + n)
    rows, centres = make_vectors(n, rng)
    titles, breadcrumbs, texts = make_texts(n, rng)
    return Corpus(n, pack_vectors(rows), rows, centres, titles, breadcrumbs, texts)


@dataclass
class Query:
    text: str
    terms: list[str]
    vector: np.ndarray


def make_queries(corpus: Corpus, count: int, seed: int) -> list[Query]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        head = list(WORDS[zipf_ranks(rng, int(rng.integers(3, 6)))])
        unit_words = corpus.texts[int(rng.integers(0, corpus.n))].split()
        rare = [w for w in unit_words if len(w) > 4] or unit_words  # rank > 400: >= 3 syllables
        picked = [rare[int(i)] for i in rng.integers(0, len(rare), int(rng.integers(2, 5)))]
        text = " ".join(head + picked)
        centre = corpus.centres[int(rng.integers(0, len(corpus.centres)))]
        vector = centre + rng.standard_normal(DIMS, dtype=np.float32)
        vector /= np.linalg.norm(vector)
        out.append(Query(text, query_terms(text), vector.astype(np.float32)))
    return out


def median_ms(
    fn: Callable[[Any], object], inputs: Sequence[Any], budget: float, min_runs: int = 30
) -> float:
    """Median wall time of ``fn(x)`` in ms, cycling through ``inputs`` after a warm pass."""
    for x in inputs[: min(len(inputs), 8)]:
        fn(x)
    times: list[float] = []
    deadline = time.perf_counter() + budget
    i = 0
    while len(times) < min_runs or (time.perf_counter() < deadline and len(times) < 5000):
        x = inputs[i % len(inputs)]
        t0 = time.perf_counter()
        fn(x)
        times.append(time.perf_counter() - t0)
        i += 1
    return statistics.median(times) * 1e3


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


# ---------------------------------------------------------------- (a) dense scan


def bench_dense(corpus: Corpus, queries: list[Query], budget: float) -> dict[str, float]:
    zeros = np.zeros(DIMS, np.float32)
    dense = DenseIndex.from_bytes(corpus.packed, corpus.n, DIMS, zeros)
    index = faiss.IndexBinaryFlat(DIMS)
    index.add(corpus.rows)
    q_rows = [sign_bits(q.vector[None, :]) for q in queries]
    k = min(DENSE_TOP, corpus.n)

    def ours_topk(q: Query) -> np.ndarray:
        dist = dense.hamming(q.vector)
        picked: np.ndarray = np.argpartition(dist, k - 1)[:k]
        return picked

    for q, qr in zip(queries[:4], q_rows, strict=False):  # same top-k distances as faiss
        ours = np.sort(dense.hamming(q.vector)[ours_topk(q)])
        theirs, _ = index.search(qr, k)
        if not np.array_equal(ours, theirs[0]):
            raise AssertionError(f"n={corpus.n}: top-{k} Hamming distances differ from faiss")
    result = {
        "ours_topk": median_ms(ours_topk, queries, budget),
        "ours_search": median_ms(lambda q: dense.search(q.vector, k), queries, budget),
        "faiss": median_ms(lambda qr: index.search(qr, k), q_rows, budget),
    }
    return result


# ---------------------------------------------------------------- (b) BM25


def lexical_docs(corpus: Corpus) -> list[LexicalDoc]:
    return [
        LexicalDoc(title=t, breadcrumb=b, text=x)
        for t, b, x in zip(corpus.titles, corpus.breadcrumbs, corpus.texts, strict=True)
    ]


def bm25s_tokens(corpus: Corpus) -> list[list[str]]:
    """The same weighted terms our block counts: title x3, breadcrumb, text."""
    return [
        (t.split() * 3) + b.split() + x.split()
        for t, b, x in zip(corpus.titles, corpus.breadcrumbs, corpus.texts, strict=True)
    ]


def bench_lexical(
    corpus: Corpus, block: LexicalBlock, queries: list[Query], budget: float
) -> dict[str, float]:
    ours = NumpyLexical(block)
    t0 = time.perf_counter()
    theirs = bm25s.BM25(k1=1.2, b=0.7, delta=0.5, method="bm25+")
    theirs.index(bm25s_tokens(corpus), show_progress=False)
    bm25s_index_s = time.perf_counter() - t0
    gc.collect()
    result = {
        "ours_search": median_ms(lambda q: ours.search(q.terms, LEXICAL_TOP), queries, budget),
        "ours_scores": median_ms(lambda q: ours.scores(q.terms), queries, budget),
        "bm25s_retrieve": median_ms(
            lambda q: theirs.retrieve([q.terms], k=LEXICAL_TOP, show_progress=False),
            queries,
            budget,
        ),
        "bm25s_scores": median_ms(lambda q: theirs.get_scores(q.terms), queries, budget),
        "bm25s_index_s": bm25s_index_s,
    }
    # Same corpus, similar BM25+: the top-10 overlap says they rank alike, not identically
    # (bm25s's bm25+ idf is ln((N + 1) / df), ours ln(1 + (N - df + 0.5) / (df + 0.5))).
    overlaps = []
    for q in queries[:32]:
        a = {u for u, _ in ours.search(q.terms, 10)}
        docs, _ = theirs.retrieve([q.terms], k=10, show_progress=False)
        overlaps.append(len(a & {int(d) for d in docs[0]}) / 10)
    result["top10_overlap"] = statistics.mean(overlaps)
    if corpus.n <= PURE_PYTHON_MAX:
        pure = LexicalIndex(block)
        result["pure_python"] = median_ms(
            lambda q: pure.search(q.terms, LEXICAL_TOP), queries, budget, min_runs=10
        )
    return result


# ---------------------------------------------------------------- (c) retrieval + gate


def bench_gate(
    corpus: Corpus, block: LexicalBlock, queries: list[Query], questions: list[str]
) -> dict[str, float]:
    zeros = np.zeros(DIMS, np.float32)
    dense_index = DenseIndex.from_bytes(corpus.packed, corpus.n, DIMS, zeros)
    searcher = Searcher(NumpyLexical(block), DenseChannel(dense_index, None))
    params = default_params("hybrid")
    threshold = params.threshold
    embedder = load_embedder(EmbedderSpec(name="wordllama"))
    assert embedder is not None

    def turn(q: Query) -> tuple[bool, int]:
        ranking = searcher.search(q.text, q.vector)
        score = gate_score(ranking.signals, params)
        return score >= threshold, confidence(score, threshold)

    def turn_embedded(i: int) -> tuple[bool, int]:
        vector = np.asarray(embedder.embed_query(questions[i % len(questions)]), np.float32)
        ranking = searcher.search(queries[i].text, vector)
        score = gate_score(ranking.signals, params)
        return score >= threshold, confidence(score, threshold)

    def passes(fn: Callable[[Any], object], inputs: Sequence[Any]) -> tuple[float, ...]:
        """p50 and p99 of wall time, and p99 of this thread's CPU time: on a shared
        2-core VM a query descheduled for a time slice shows in the wall p99 only."""
        for x in inputs[:50]:
            fn(x)
        p50s, p99s, cpu99s = [], [], []
        for _ in range(GATE_PASSES):
            wall, cpu = [], []
            for x in inputs:
                c0, t0 = time.thread_time(), time.perf_counter()
                fn(x)
                wall.append(time.perf_counter() - t0)
                cpu.append(time.thread_time() - c0)
            p50s.append(percentile(wall, 50) * 1e3)
            p99s.append(percentile(wall, 99) * 1e3)
            cpu99s.append(percentile(cpu, 99) * 1e3)
        return statistics.median(p50s), statistics.median(p99s), statistics.median(cpu99s)

    p50, p99, cpu99 = passes(turn, queries)
    e50, e99, ecpu99 = passes(turn_embedded, list(range(len(queries))))
    embed_only = median_ms(lambda s: embedder.embed_query(s), questions, 0.5)
    # Where the time goes: each channel alone, with the depths Searcher.search uses.
    sample = queries[:TIMING_QUERIES]
    lexical_ms = median_ms(
        lambda q: searcher.lexical.search(q.terms, DEFAULT_PARAMS.channel_depth), sample, 0.5
    )
    dense_ms = median_ms(
        lambda q: dense_index.search(q.vector, DEFAULT_PARAMS.dense_candidates), sample, 0.5
    )
    return {
        "p50": p50,
        "p99": p99,
        "cpu_p99": cpu99,
        "embed_p50": e50,
        "embed_p99": e99,
        "embed_cpu_p99": ecpu99,
        "embed_only": embed_only,
        "lexical_channel": lexical_ms,
        "dense_channel": dense_ms,
    }


# ---------------------------------------------------------------- report


def fmt(ms: float | None) -> str:
    if ms is None:
        return "-"
    return f"{ms:.3f}" if ms < 10 else f"{ms:.1f}"


def ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or b is None else f"{a / b:.2f}x"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="1k and 10k units only")
    parser.add_argument(
        "--smallest", action="store_true", help="the 1k-unit corpus only (checks the script runs)"
    )
    parser.add_argument(
        "--bm25-1m", action="store_true", help="build the 1M-unit lexical block too (~8 min)"
    )
    parser.add_argument("--seconds", type=float, default=1.5, help="budget per median")
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    parser.add_argument("--smoke", action="store_true", help="1k units, 0.1 s budgets (a smoke)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.smallest, args.seconds = True, 0.1
    sizes = SIZES[:1] if args.smallest else QUICK_SIZES if args.quick else SIZES
    faiss.omp_set_num_threads(1)

    questions = [
        json.loads(line)["question"]
        for line in DEVSET.read_text(encoding="utf-8").splitlines()
        if line
    ]
    print(f"# tree: {tree_state()}")
    blas = {k: v for k, v in os.environ.items() if k.startswith(("OPENBLAS", "OMP_", "MKL_"))}
    print(
        f"# Python {platform.python_version()}, numpy {np.__version__}, faiss {faiss.__version__} "
        f"(1 thread), bm25s {bm25s.__version__} (numpy backend), {os.cpu_count()} CPUs; "
        f"BLAS/OMP env: {blas or 'none set'}"
    )
    print(
        f"# {DIMS}-bit vectors; Zipf({ZIPF_EXPONENT}) over {VOCABULARY:,} words, "
        f"~{MEAN_TOKENS} tokens/unit; dense top-{DENSE_TOP}, BM25 top-{LEXICAL_TOP}",
        flush=True,
    )
    results: dict[int, dict[str, Any]] = {}
    for n in sizes:
        t0 = time.perf_counter()
        corpus = make_corpus(n)
        queries = make_queries(corpus, GATE_QUERIES, SEED + 7 * n)
        timing = queries[:TIMING_QUERIES]
        made = time.perf_counter() - t0
        row: dict[str, Any] = {"dense": bench_dense(corpus, timing, args.seconds)}
        if n <= BM25_BUILD_MAX or args.bm25_1m:
            t0 = time.perf_counter()
            block = build_lexical(lexical_docs(corpus))
            row["build_lexical_s"] = time.perf_counter() - t0
            row["postings"] = len(block.tfs)
            row["lexical"] = bench_lexical(corpus, block, timing, args.seconds)
            row["gate"] = bench_gate(corpus, block, queries, questions)
            del block
        results[n] = row
        print(
            f"# {n:,} units: corpus {made:.1f} s"
            + (
                f", build_lexical {row['build_lexical_s']:.1f} s ({row['postings']:,} postings),"
                f" bm25s index {row['lexical']['bm25s_index_s']:.1f} s"
                if "lexical" in row
                else ", BM25 skipped (build_lexical > 5 min at this size; --bm25-1m)"
            ),
            file=sys.stderr,
            flush=True,
        )
        del corpus
        gc.collect()

    print()
    print("### (a) Dense top-100, 256-bit Hamming, one query (median ms)")
    print()
    print(
        "| units | ours hamming + argpartition | ours .search (+ rescoring) | "
        "faiss IndexBinaryFlat | ours/faiss (scan) | ours/faiss (.search) |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    for n, r in results.items():
        d = r["dense"]
        print(
            f"| {n:,} | {fmt(d['ours_topk'])} | {fmt(d['ours_search'])} | {fmt(d['faiss'])} | "
            f"{ratio(d['ours_topk'], d['faiss'])} | {ratio(d['ours_search'], d['faiss'])} |"
        )
    print()
    print("### (b) BM25 top-50, one query (median ms)")
    print()
    print(
        "| units | ours NumpyLexical.search | ours .scores only | bm25s retrieve | "
        "bm25s get_scores | ours/bm25s (retrieve) | ours/bm25s (scores) | pure-Python "
        "LexicalIndex.search | top-10 overlap |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n, r in results.items():
        lx = r.get("lexical")
        if lx is None:
            print(f"| {n:,} | skipped | | | | | | | |")
            continue
        print(
            f"| {n:,} | {fmt(lx['ours_search'])} | {fmt(lx['ours_scores'])} | "
            f"{fmt(lx['bm25s_retrieve'])} | {fmt(lx['bm25s_scores'])} | "
            f"{ratio(lx['ours_search'], lx['bm25s_retrieve'])} | "
            f"{ratio(lx['ours_scores'], lx['bm25s_scores'])} | {fmt(lx.get('pure_python'))} | "
            f"{lx['top10_overlap']:.2f} |"
        )
    print()
    print(
        f"### (c) Retrieval + gate per question, {GATE_QUERIES} queries "
        f"(ms, median of {GATE_PASSES} passes)"
    )
    print()
    print(
        "| units | p50 | p99 | p99 CPU time | p50 with WordLlama embed_query | "
        "p99 with embed_query | p99 CPU time | embed_query alone | lexical channel alone | "
        f"dense channel alone ({DEFAULT_PARAMS.dense_candidates} candidates) |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n, r in results.items():
        g = r.get("gate")
        if g is None:
            print(f"| {n:,} | skipped | | | | | | | | |")
            continue
        print(
            f"| {n:,} | {fmt(g['p50'])} | {fmt(g['p99'])} | {fmt(g['cpu_p99'])} | "
            f"{fmt(g['embed_p50'])} | {fmt(g['embed_p99'])} | {fmt(g['embed_cpu_p99'])} | "
            f"{fmt(g['embed_only'])} | {fmt(g['lexical_channel'])} | {fmt(g['dense_channel'])} |"
        )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({str(n): r for n, r in results.items()}, indent=1))


if __name__ == "__main__":
    main()
