"""BM25+ over the same stored blocks as `lexical`, scored with numpy on the server.

Same arithmetic in the same order as the pure-Python reference (per unit, terms are
added in query order, each contribution computed identically in float64), so the two
give the same scores and the same ranking; `tests/retrieve/test_retrieval.py` holds them to it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from docpilot_runtime.bundle.schema import LexicalBlock
from docpilot_runtime.retrieve.lexical import Hits, StoredIndex, Weights, idf
from docpilot_runtime.scoring.topk import smallest


class NumpyLexical(StoredIndex):
    def __init__(self, block: LexicalBlock) -> None:
        super().__init__(block)
        self.offsets = np.frombuffer(block.offsets, dtype="<u4").astype(np.int64)
        dtype = "<u2" if block.doc_dtype == "u2" else "<u4"
        gaps = np.frombuffer(block.docs, dtype=dtype).astype(np.int64)
        # Undo the gap encoding: a running sum that restarts at each term's list.
        running = np.cumsum(gaps)
        starts = self.offsets[:-1]
        lengths_per_term = np.diff(self.offsets)
        base = np.where(starts > 0, running[np.maximum(starts - 1, 0)], 0) if len(gaps) else starts
        self.docs = (running - np.repeat(base, lengths_per_term)).astype(np.int32)
        tfs = np.frombuffer(block.tfs, dtype=np.uint8).astype(np.float64)
        lengths = np.frombuffer(block.lengths, dtype="<u4").astype(np.float64)
        self.norms = self.k1 * (1.0 - self.b + self.b * lengths / self.avg_length)
        # Each posting's saturated term frequency, computed once: a query then only
        # multiplies by the term's idf and adds.
        k1p1 = self.k1 + 1.0
        self.contributions = (tfs * k1p1) / (tfs + self.norms[self.docs]) + self.delta

    def scores(self, terms: Sequence[str], weights: Weights = None) -> np.ndarray:
        """BM25+ score of every unit (zeros where no term matches); a term's idf is
        multiplied by its entry in ``weights`` (1 when absent)."""
        out = np.zeros(self.count, dtype=np.float64)
        for term in dict.fromkeys(terms):
            i = self.vocabulary.get(term)
            if i is None:
                continue
            start, end = int(self.offsets[i]), int(self.offsets[i + 1])
            weight = idf(self.count, end - start)
            if weights is not None and term in weights:
                weight *= weights[term]
            out[self.docs[start:end]] += weight * self.contributions[start:end]
        return out

    def search(self, terms: Sequence[str], limit: int = 50, weights: Weights = None) -> Hits:
        """Top units as (unit index, score), best first; ties go to the earlier unit."""
        scores = self.scores(terms, weights)
        hits = np.flatnonzero(scores)
        best = hits[smallest(-scores[hits], limit)]
        return [(int(u), float(scores[u])) for u in best]
