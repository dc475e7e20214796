"""Hamming scan over 1-bit vectors: row-major against word-major layout.

The bundle stores sign bits word-major (``docpilot_runtime.scoring.dense``, ``LAYOUT``): all
units' 64-bit word 0, then all units' word 1, ... This script checks that choice.
For 256-bit vectors (4 words) at 10k, 100k and 1M units, one query, top-100:

* row-major: an (N, 4) uint64 array; XOR with the query broadcast over rows,
  ``np.bitwise_count``, ``sum(axis=1)``;
* word-major: a (4, N) uint64 array; XOR each contiguous column with one query word,
  ``np.bitwise_count``, add into an int32 accumulator (what ``DenseIndex.hamming`` does);

both followed by ``argpartition`` of the int32 distances for the top 100. Beside them:
each scan alone, the word-major scan with ``argpartition`` on the distances cast to
int16 (cast included), and the word-major scan followed by a histogram cut-off instead
of ``argpartition`` (distances only take DIMS + 1 values). Timings are
medians over repeated warm runs (one untimed run first) on random bits from a fixed
seed; both layouts are checked to return the same distances.

These are integer numpy ufuncs: no BLAS is involved, so OPENBLAS_* / OMP_* variables
do not change the result; numpy runs them on one thread.

Run: ``.venv/bin/python benchmarks/bench_bit_layout.py [--sizes 10000,100000] [--seconds 2] [--smoke]``
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Callable

import numpy as np
from docpilot_runtime.scoring.dense import DenseIndex, pack_vectors, sign_bits

DIMS = 256
WORDS = DIMS // 64
TOP = 100
SEED = 20240611


def hamming_row_major(rows: np.ndarray, q: np.ndarray) -> np.ndarray:
    """rows: (N, 4) uint64; q: (4,) uint64."""
    dist: np.ndarray = np.bitwise_count(rows ^ q).sum(axis=1, dtype=np.int32)
    return dist


def hamming_word_major(cols: np.ndarray, q: np.ndarray) -> np.ndarray:
    """cols: (4, N) uint64, each row contiguous; q: (4,) uint64."""
    dist: np.ndarray = np.bitwise_count(cols[0] ^ q[0]).astype(np.int32)
    for w in range(1, cols.shape[0]):
        dist += np.bitwise_count(cols[w] ^ q[w])
    return dist


def top_k(dist: np.ndarray, k: int = TOP) -> np.ndarray:
    rows: np.ndarray = np.argpartition(dist, k - 1)[:k]
    return rows


def top_k_by_histogram(dist: np.ndarray, k: int = TOP) -> np.ndarray:
    """The same k smallest distances without a partition: distances are 0..DIMS, so
    count them, find the cut-off distance, and take every row below it plus the first
    rows (in unit order) at it. Exactly k rows; ties broken by unit order."""
    counts = np.bincount(dist, minlength=DIMS + 1)
    cut = int(np.searchsorted(np.cumsum(counts), k))  # first distance where the total reaches k
    below = np.flatnonzero(dist < cut)
    at = np.flatnonzero(dist == cut)[: k - len(below)]
    return np.concatenate((below, at))


def median_ms(fn: Callable[[], object], budget: float, min_runs: int = 7) -> tuple[float, int]:
    """Median wall time of ``fn`` in ms, after one warm-up run, over ~``budget`` seconds."""
    fn()
    times: list[float] = []
    deadline = time.perf_counter() + budget
    while len(times) < min_runs or (time.perf_counter() < deadline and len(times) < 2000):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3, len(times)


def bench(n: int, budget: float) -> dict[str, float]:
    rng = np.random.default_rng(SEED + n)
    floats = rng.standard_normal((n, DIMS), dtype=np.float32)
    query = rng.standard_normal(DIMS, dtype=np.float32)
    bits = sign_bits(floats)  # (n, 32) uint8, the indexer's own packing
    del floats
    rows = np.ascontiguousarray(bits).view(">u8").astype("<u8")  # (n, 4) row-major
    packed = pack_vectors(bits)  # the bundle's word-major bytes
    dense = DenseIndex.from_bytes(packed, n, DIMS, np.zeros(DIMS, np.float32))
    cols = dense.words  # (4, n), a view over the bundle bytes, as at runtime
    q = dense.query_words(query)

    row_d = hamming_row_major(rows, q)
    col_d = hamming_word_major(cols, q)
    if not np.array_equal(row_d, col_d) or not np.array_equal(col_d, dense.hamming(query)):
        raise AssertionError(f"layouts disagree on the distances at n={n}")

    row_ms, row_runs = median_ms(lambda: top_k(hamming_row_major(rows, q)), budget)
    col_ms, col_runs = median_ms(lambda: top_k(hamming_word_major(cols, q)), budget)
    int16_ms, _ = median_ms(lambda: top_k(hamming_word_major(cols, q).astype(np.int16)), budget)
    hist_ms, _ = median_ms(lambda: top_k_by_histogram(hamming_word_major(cols, q)), budget)
    picked = top_k_by_histogram(col_d)
    if (
        len(picked) != TOP
        or np.sort(col_d[picked]).tolist() != np.sort(col_d[top_k(col_d)]).tolist()
    ):
        raise AssertionError(f"histogram top-{TOP} differs from argpartition's at n={n}")
    scan_row_ms, _ = median_ms(lambda: hamming_row_major(rows, q), budget / 2)
    scan_col_ms, _ = median_ms(lambda: hamming_word_major(cols, q), budget / 2)
    return {
        "row": row_ms,
        "col": col_ms,
        "hist": hist_ms,
        "int16": int16_ms,
        "scan_row": scan_row_ms,
        "scan_col": scan_col_ms,
        "runs": min(row_runs, col_runs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--seconds", type=float, default=2.0, help="time budget per measurement")
    parser.add_argument("--smoke", action="store_true", help="10k units, 0.1 s budget (a smoke)")
    args = parser.parse_args()
    if args.smoke:
        args.sizes, args.seconds = "10000", 0.1
    sizes = [int(s) for s in args.sizes.split(",")]

    print(
        f"# numpy {np.__version__}, Python {platform.python_version()}, "
        f"{platform.machine()}, {DIMS}-bit vectors, 1 query, top-{TOP}, warm medians, "
        f"load average {os.getloadavg()[0]:.2f} (1 min)"
    )
    print()
    print(
        "| units | row-major scan+top-100 | word-major scan+top-100 | row/word | "
        "row-major scan only | word-major scan only | word-major, argpartition on int16 | word-major + histogram top-100 | runs |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in sizes:
        r = bench(n, args.seconds)
        print(
            f"| {n:,} | {r['row']:.3f} ms | {r['col']:.3f} ms | {r['row'] / r['col']:.2f}x | "
            f"{r['scan_row']:.3f} ms | {r['scan_col']:.3f} ms | {r['int16']:.3f} ms | "
            f"{r['hist']:.3f} ms | "
            f"{int(r['runs'])} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
