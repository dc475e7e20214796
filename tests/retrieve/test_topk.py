"""Top-k selection: the sampled cut-off never changes the answer."""

from __future__ import annotations

import numpy as np
import pytest
from docpilot_runtime.scoring.topk import smallest


def brute_force(values: np.ndarray, k: int) -> np.ndarray:
    return np.lexsort((np.arange(len(values)), values))[:k]


@pytest.mark.parametrize("n", [10, 1000, 50_000, 300_000])
@pytest.mark.parametrize("k", [1, 50, 200])
def test_smallest_equals_a_full_sort_with_ties_broken_by_index(n: int, k: int) -> None:
    rng = np.random.default_rng(n + k)
    for values in (
        rng.integers(0, 257, n).astype(np.int32),  # Hamming distances: many ties
        -rng.random(n),  # negated BM25 scores
        np.zeros(n, dtype=np.int32),  # everything tied
    ):
        assert (smallest(values, k) == brute_force(values, k)).all()


def test_smallest_of_nothing_is_empty() -> None:
    assert len(smallest(np.zeros(0), 5)) == 0


def test_faiss_and_numpy_scans_pick_the_same_candidates(monkeypatch: pytest.MonkeyPatch) -> None:
    import docpilot_runtime.scoring.dense as dense_module
    from docpilot_runtime.scoring.dense import DenseIndex, pack_vectors, sign_bits

    rng = np.random.default_rng(3)
    n = 120_000
    vectors = rng.standard_normal((n, 256)).astype(np.float32)
    raw = pack_vectors(sign_bits(vectors))
    query = vectors[4242] + 0.3 * rng.standard_normal(256).astype(np.float32)
    with_faiss = DenseIndex.from_bytes(raw, n, 256, np.zeros(256, np.float32))
    rows_faiss, scores_faiss = with_faiss.search(query, 100)
    assert with_faiss._faiss not in (None, False), "faiss is a test dependency"
    monkeypatch.setattr(dense_module, "FAISS_MIN_UNITS", 10**9)
    numpy_only = DenseIndex.from_bytes(raw, n, 256, np.zeros(256, np.float32))
    rows_numpy, scores_numpy = numpy_only.search(query, 100)
    assert rows_faiss[0] == rows_numpy[0] == 4242
    # Both rescore the same Hamming top-100 (ties at the edge may differ in which unit).
    assert len(set(rows_faiss[:50]) & set(rows_numpy[:50])) >= 48
    np.testing.assert_allclose(scores_faiss[:20], scores_numpy[:20], rtol=1e-5)
