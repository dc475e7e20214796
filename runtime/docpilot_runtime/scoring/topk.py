"""Top-k selection for the server's numpy scorers, deterministic on ties.

A full ``argpartition`` over a million distances costs more than the scan that made
them. Most values cannot be in the top k, so a strided sample first estimates a
cut-off that keeps a few times k candidates; only those are sorted exactly. When the
estimate keeps too few, the exact path runs instead, so the result never changes.
"""

from __future__ import annotations

import numpy as np

SAMPLE = 4096


def smallest(values: np.ndarray, k: int) -> np.ndarray:
    """Indexes of the ``k`` smallest values, ordered by (value, index)."""
    n = len(values)
    k = min(k, n)
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    candidates: np.ndarray | None = None
    if n > 8 * SAMPLE and k < n // 8:
        sample = values[:: n // SAMPLE]
        pos = min(len(sample) - 1, 4 * k * len(sample) // n + 1)
        cut = np.partition(sample, pos)[pos]
        kept = np.flatnonzero(values <= cut)
        if len(kept) >= k:
            candidates = kept
    if candidates is None:
        if k < n:
            cut = values[np.argpartition(values, k - 1)[:k]].max()
            candidates = np.flatnonzero(values <= cut)  # ties at the edge stay in
        else:
            candidates = np.arange(n)
    order = np.lexsort((candidates, values[candidates]))[:k]
    result: np.ndarray = candidates[order]
    return result
