"""Calibrate the refusal gate for this corpus, at build time.

Two probe sets are run through the same retrieval the runtime uses:

* **covered**: for up to 160 units (picked by a hash of their id, so the pick is
  stable across builds and edits), a question made from the unit's own vocabulary:
  three mid-frequency words of its text, with the heading in front for every other
  probe, in a question frame ("How do I …?"). These are questions the corpus can
  answer.
* **uncovered**: the fixed off-topic questions in ``probes`` (everyday subjects, nine
  languages) and 40 word salads: five mid-frequency words drawn from five different
  units, which match many sections weakly and none well — the shape of a question the
  corpus cannot answer.

For each mode (hybrid, lexical) the gate keeps the median of every signal on each
side as its anchors, and as its threshold a quantile of one probe set's scores: the
word salads' 5th percentile in hybrid mode, the off-topic questions' 90th in lexical
mode (``gate.calibrate_mode`` says why). Probe queries are embedded through the same
content-hash cache as the units, so an unchanged rebuild embeds nothing.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence

import numpy as np

from docpilot_runtime.bundle.schema import Gate, LexicalBlock, Signals
from docpilot_runtime.embedders import Embedder
from docpilot_runtime.index.cache import EmbeddingCache, cache_key
from docpilot_runtime.index.probes import OFF_TOPIC
from docpilot_runtime.index.tokens import cached_tokens
from docpilot_runtime.index.units import Unit
from docpilot_runtime.retrieve.gate import calibrate_mode
from docpilot_runtime.retrieve.search import Searcher
from docpilot_runtime.scoring.dense import DenseChannel, DenseIndex
from docpilot_runtime.scoring.lexical_numpy import NumpyLexical

COVERED_PROBES = 160
# Real questions carry function words ("how do I", "what is"), which weigh on both the
# lexical ceiling and a mean-pooled embedding; probes get the same shape so that the
# anchors compare like with like.
FRAMES = (
    "How do I {}?",
    "What is {}?",
    "Can I {}?",
    "How does {} work?",
    "Where do I set {}?",
    "Why {}?",
)
SALADS = 40
METHOD = (
    "median anchors (unit-keyword vs off-topic and word-salad probes); "
    "threshold = hybrid p5 word salads, lexical p90 off-topic"
)


def _stable_order(units: Sequence[Unit]) -> list[int]:
    return sorted(range(len(units)), key=lambda i: hashlib.sha256(units[i].id.encode()).digest())


def _rng(seed: str) -> random.Random:
    return random.Random(int.from_bytes(hashlib.sha256(seed.encode()).digest()[:8], "big"))


def _mid_words(text: str, lexical: NumpyLexical) -> list[str]:
    """Distinct words of ``text`` that are neither rare nor everywhere in the corpus."""
    high = max(2, int(0.1 * lexical.count))
    words = []
    for token in dict.fromkeys(cached_tokens(text)):
        if len(token) < 3 or not any(c.isalpha() for c in token):
            continue
        if 2 <= lexical.document_frequency(token) <= high:
            words.append(token)
    return words


def covered_probes(units: Sequence[Unit], lexical: NumpyLexical) -> list[str]:
    probes: list[str] = []
    for i in _stable_order(units):
        unit = units[i]
        words = _mid_words(unit.text, lexical)
        if len(words) < 3:
            continue
        rng = _rng(unit.id)
        picked = rng.sample(words, 3)
        title = unit.title if len(probes) % 2 == 0 else ""
        probes.append(rng.choice(FRAMES).format(" ".join(p for p in (title, *picked) if p)))
        if len(probes) >= COVERED_PROBES:
            break
    return probes


def salad_probes(units: Sequence[Unit], lexical: NumpyLexical) -> list[str]:
    if len(units) < 5:
        return []
    rng = _rng(f"salad:{len(units)}")
    order = _stable_order(units)
    salads = []
    for n in range(SALADS):
        picks = rng.sample(order, 5)
        words = []
        for i in picks:
            candidates = _mid_words(units[i].text, lexical)
            if candidates:
                words.append(_rng(f"{n}:{units[i].id}").choice(candidates))
        if len(words) >= 3:
            salads.append(rng.choice(FRAMES).format(" ".join(words)))
    return salads


def _query_vectors(
    texts: Sequence[str], embedder: Embedder, cache: EmbeddingCache
) -> tuple[list[np.ndarray], int]:
    vectors = []
    embedded = 0
    for text in texts:
        key = cache_key(f"{embedder.name}/{embedder.model}/query", embedder.dims, text)
        hit = cache.get(key)
        if hit is None:
            hit = np.asarray(embedder.embed_query(text), dtype=np.float32)
            cache.put(key, hit)
            embedded += 1
        vectors.append(hit)
    return vectors, embedded


def calibrate_gate(
    units: Sequence[Unit],
    lexical_block: LexicalBlock,
    dense: DenseIndex | None,
    embedder: Embedder | None,
    cache: EmbeddingCache | None,
) -> tuple[Gate, int]:
    """The bundle's gate, and how many probe queries had to be embedded."""
    lexical = NumpyLexical(lexical_block)
    covered = covered_probes(units, lexical)
    salads = salad_probes(units, lexical)
    uncovered = [*OFF_TOPIC, *salads]
    # With the units, as the runtime searches: coverage reads the best unit's terms.
    lexical_searcher = Searcher(lexical, units=units)
    lexical_covered = [lexical_searcher.search(q).signals for q in covered]
    lexical_uncovered = [lexical_searcher.search(q).signals for q in uncovered]
    off = len(OFF_TOPIC)
    lexical_gate = calibrate_mode(
        "lexical", lexical_covered, lexical_uncovered[:off], lexical_uncovered[off:]
    )
    embedded = 0
    hybrid_gate = None
    if dense is not None and embedder is not None and cache is not None:
        searcher = Searcher(lexical, DenseChannel(dense, None), units=units)
        vectors, embedded = _query_vectors([*covered, *uncovered], embedder, cache)

        def signals(queries: list[str], offset: int) -> list[Signals]:
            return [searcher.search(q, vectors[offset + i]).signals for i, q in enumerate(queries)]

        hybrid_uncovered = signals(uncovered, len(covered))
        hybrid_gate = calibrate_mode(
            "hybrid", signals(covered, 0), hybrid_uncovered[:off], hybrid_uncovered[off:]
        )
    return Gate(method=METHOD, lexical=lexical_gate, hybrid=hybrid_gate), embedded
