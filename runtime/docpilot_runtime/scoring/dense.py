"""1-bit vectors: packing sign bits at build time and scanning them at query time.

One owner for the bit layout. Vectors are centred (minus the corpus mean, where the
embedder needs it), reduced to sign bits and stored as 64-bit words in **word-major**
order: all units' word 0, then all units' word 1, …. The Hamming scan then XORs one
contiguous column per word and adds popcounts, which measured 3-5x faster than
row-major rows on this machine (``benchmarks/bench_bit_layout.py``).

Candidates from the Hamming scan are rescored with the float query against the
stored bits (an asymmetric cosine), which recovers most of float quality at no
extra bytes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from docpilot_runtime.embedders import EmbedderError
from docpilot_runtime.scoring.topk import smallest

log = logging.getLogger("docpilot.retrieval")

LAYOUT = "word-major"
WORD_BITS = 64
# From this size on, the Hamming scan goes through faiss's IndexBinaryFlat when faiss is
# installed (pip install faiss-cpu): a compiled popcount loop, ~10x numpy at 1M units.
# Pinned to one thread: two threads stall erratically on small VMs (FIELD-NOTES).
FAISS_MIN_UNITS = 100_000


def sign_bits(vectors: np.ndarray, center: np.ndarray | None = None) -> np.ndarray:
    """Packed sign bits, one row per vector: (n, dims/8) uint8, bit order big-endian."""
    if center is not None:
        vectors = vectors - center
    return np.packbits(vectors > 0, axis=1)


def pack_vectors(rows: np.ndarray) -> bytes:
    """Lay packed sign-bit rows out in the bundle's word-major order."""
    nbytes = rows.shape[1]
    if nbytes % 8:
        raise ValueError(f"vector width must be a multiple of 64 bits, got {nbytes * 8}")
    words = np.ascontiguousarray(rows).view(">u8")
    # Big-endian view keeps bit i of the vector at bit (63 - i % 64) of word i // 64,
    # the same order np.unpackbits restores; stored little-endian for a zero-copy load.
    return np.ascontiguousarray(words.astype("<u8").T).tobytes()


@dataclass
class DenseIndex:
    """Word-major sign bits of every unit, viewed in place over the bundle's bytes."""

    words: np.ndarray  # (dims/64, n) uint64, read-only view of the bundle
    dims: int
    center: np.ndarray  # (dims,) float32; zeros when the embedder needs no centring
    _faiss: Any = field(default=None, repr=False)  # built on first use, see FAISS_MIN_UNITS

    @classmethod
    def from_bytes(cls, bits: bytes, count: int, dims: int, center: np.ndarray) -> DenseIndex:
        words = np.frombuffer(bits, dtype="<u8").reshape(dims // WORD_BITS, count)
        return cls(words=words, dims=dims, center=center)

    @property
    def count(self) -> int:
        return int(self.words.shape[1])

    def query_words(self, query: np.ndarray) -> np.ndarray:
        bits = np.packbits((query - self.center) > 0)
        words: np.ndarray = bits.view(">u8").astype("<u8")
        return words

    def hamming(self, query: np.ndarray) -> np.ndarray:
        """Hamming distance from the query's bits to every unit (int32, length n)."""
        q = self.query_words(query)
        dist: np.ndarray = np.bitwise_count(self.words[0] ^ q[0]).astype(np.int32)
        for w in range(1, self.words.shape[0]):
            dist += np.bitwise_count(self.words[w] ^ q[w])
        return dist

    def _faiss_candidates(self, query: np.ndarray, k: int) -> np.ndarray | None:
        """Hamming top-k through faiss, or None when faiss is not installed."""
        if self._faiss is None:
            try:
                import faiss
            except ImportError:
                self._faiss = False
                return None
            faiss.omp_set_num_threads(1)
            index = faiss.IndexBinaryFlat(self.dims)
            rows = np.ascontiguousarray(self.words.T).astype(">u8").view(np.uint8)
            index.add(rows)
            self._faiss = index
        if self._faiss is False:
            return None
        q = np.packbits((query - self.center) > 0)[None, :]
        _dist, labels = self._faiss.search(q, k)
        found: np.ndarray = labels[0][labels[0] >= 0].astype(np.int64)
        return found

    def unit_signs(self, rows: np.ndarray) -> np.ndarray:
        """The ±1 vectors of the given units, (len(rows), dims) float32."""
        words = self.words[:, rows].T.astype(">u8")  # back to big-endian bit order
        bits = np.unpackbits(words.view(np.uint8).reshape(len(rows), -1), axis=1)
        return bits.astype(np.float32) * 2.0 - 1.0

    def search(self, query: np.ndarray, candidates: int = 100) -> tuple[np.ndarray, np.ndarray]:
        """Best units for the query: Hamming top-``candidates``, rescored by the float
        query against their bits. Returns (rows, scores), best first; scores are the
        cosine between the centred query and each unit's sign vector."""
        n = self.count
        if n == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        rows = self._faiss_candidates(query, candidates) if n >= FAISS_MIN_UNITS else None
        if rows is None:
            rows = smallest(self.hamming(query), candidates)
        centred = (query - self.center).astype(np.float32)
        norm = float(np.linalg.norm(centred)) * np.sqrt(self.dims)
        scores = self.unit_signs(rows) @ centred / (norm or 1.0)
        order = np.lexsort((rows, -scores))  # score desc, then unit order: deterministic
        return rows[order], scores[order].astype(np.float32)


class DenseChannel:
    """The server's dense channel for the turn core (``retrieval.DenseScorer``): the
    query embedder plus the Hamming scan. An embedder that fails answers None, and the
    turn goes on in lexical mode."""

    def __init__(self, index: DenseIndex, embed_query: Callable[[str], Any] | None) -> None:
        self.index = index
        self.embed_query = embed_query

    def embed(self, text: str) -> np.ndarray | None:
        if self.embed_query is None:
            return None
        try:
            return np.asarray(self.embed_query(text), dtype=np.float32)
        except (EmbedderError, OSError, ValueError) as exc:
            log.warning(
                "query embedder failed (%s); answering in lexical mode", exc.__class__.__name__
            )
            return None

    def search(self, query: object, candidates: int) -> list[tuple[int, float]]:
        rows, scores = self.index.search(np.asarray(query, dtype=np.float32), candidates)
        return [(int(r), float(s)) for r, s in zip(rows, scores, strict=True)]

    def cosines(self, query: object, rows: Sequence[int]) -> list[float]:
        """The query's cosine to each unit's sign vector, as ``search`` scores them."""
        vector = np.asarray(query, dtype=np.float32)
        centred = (vector - self.index.center).astype(np.float32)
        norm = float(np.linalg.norm(centred)) * float(np.sqrt(self.index.dims)) or 1.0
        signs = self.index.unit_signs(np.asarray(rows, dtype=np.int64))
        return [float(c) for c in signs @ centred / norm]
