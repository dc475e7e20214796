"""Calibrate the refusal gate for this corpus, at build time.

Probe sets are run through the same retrieval the runtime uses (``probe_sets``):

* **covered**: for up to 160 units (picked by a hash of their id, so the pick is
  stable across builds and edits), a question made from the unit's own vocabulary:
  three mid-frequency words of its text, with the heading in front for every other
  probe, in a question frame ("How do I …?"). These are questions the corpus can
  answer.
* **uncovered**: the fixed off-topic questions in ``probes`` (everyday subjects, nine
  languages) and 40 word salads: five mid-frequency words drawn from five different
  units, which match many sections weakly and none well — the shape of a question the
  corpus cannot answer.
* **shaped like real off-topic questions** (issue 23): another product's name the site
  never uses with two of a unit's own words (``other_tool``), error messages from other
  stacks (``other_error``), and an option no unit has in a version that may not exist
  (``missing_option``). They are measured against, not averaged into the anchors.

For each mode (hybrid, lexical) the gate keeps the median of every signal over the
covered probes and over the off-topic questions and salads as its anchors, and as its
threshold a quantile of one probe set's scores: the missing-option probes' median in
hybrid mode, the off-topic questions' 90th percentile in lexical mode
(``gate.calibrate_mode`` says why). Probe queries are embedded through the same
content-hash cache as the units, so an unchanged rebuild embeds nothing.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence

import numpy as np

from docpilot_runtime.bundle.schema import Gate, GateParams, LexicalBlock, Signals
from docpilot_runtime.embedders import Embedder
from docpilot_runtime.index.cache import EmbeddingCache, cache_key
from docpilot_runtime.index.probes import OFF_TOPIC, OTHER_STACK_ERRORS, OTHER_TOOLS
from docpilot_runtime.index.tokens import cached_tokens
from docpilot_runtime.index.units import Unit
from docpilot_runtime.retrieve.gate import calibrate_mode
from docpilot_runtime.retrieve.params import DEFAULT_PARAMS
from docpilot_runtime.retrieve.search import Searcher
from docpilot_runtime.retrieve.tokenize import tokenize
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
    "threshold = hybrid p50 missing-option probes, lexical p90 off-topic"
)


def calibration_fingerprint() -> bytes:
    """What the calibration depends on beside the pages: its method, the gate's tunables
    and every fixed probe. A warm rebuild whose fingerprint changed calibrates again."""
    parts = [METHOD, repr(DEFAULT_PARAMS), *FRAMES, *OTHER_TOOL_FRAMES, *OFF_TOPIC,
             *OTHER_TOOLS, *OTHER_STACK_ERRORS, str(COVERED_PROBES), str(SALADS)]
    return hashlib.sha256("\0".join(parts).encode()).digest()


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


OTHER_TOOL_FRAMES = (
    "How do I {words} in {tool}?",
    "Does {tool} support {words}?",
    "{tool}: {words} is not working",
    "Can I use {words} with {tool}?",
)
OTHER_TOOL_PROBES = 40
MISSING_OPTION_PROBES = 20


def other_tool_probes(units: Sequence[Unit], lexical: NumpyLexical) -> list[str]:
    """Another product's name (one this site never uses) with two of a unit's own words:
    the shape of the real off-topic questions a docs site gets."""
    tools = [t for t in OTHER_TOOLS if not any(lexical.document_frequency(w) for w in tokenize(t))]
    if not tools:
        return []
    probes: list[str] = []
    for i in _stable_order(units):
        words = _mid_words(units[i].text, lexical)
        if len(words) < 2:
            continue
        rng = _rng(f"tool:{units[i].id}")
        n = len(probes)
        frame = OTHER_TOOL_FRAMES[n % len(OTHER_TOOL_FRAMES)]
        pair = " ".join(rng.sample(words, 2))
        probes.append(frame.format(words=pair, tool=tools[n % len(tools)]))
        if len(probes) >= OTHER_TOOL_PROBES:
            break
    return probes


def missing_option_probes(units: Sequence[Unit], lexical: NumpyLexical) -> list[str]:
    """An option no unit has (two of the site's words from two units, joined as an
    option name is) in a version that may not exist."""
    if len(units) < 2:
        return []
    rng = _rng(f"option:{len(units)}")
    order = _stable_order(units)
    probes = []
    for _ in range(MISSING_OPTION_PROBES):
        first, second = (_mid_words(units[i].text, lexical) for i in rng.sample(order, 2))
        if first and second:
            option = f"{rng.choice(first)}_{rng.choice(second)}"
            version = f"{rng.randint(3, 12)}.{rng.randint(0, 9)}"
            probes.append(f"Since version {version}, how do I set the `{option}` option?")
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


def probe_sets(units: Sequence[Unit], lexical: NumpyLexical) -> dict[str, list[str]]:
    """Every probe question of a build, by set: ``covered`` (a unit's own words),
    ``off_topic`` (everyday questions), ``salads`` (words of five units), and the sets
    shaped like real off-topic questions: ``other_tool``, ``other_error``,
    ``missing_option``. None of them is a dev-set question (``test_gate_probes``)."""
    return {
        "covered": covered_probes(units, lexical),
        "off_topic": list(OFF_TOPIC),
        "salads": salad_probes(units, lexical),
        "other_tool": other_tool_probes(units, lexical),
        "other_error": list(OTHER_STACK_ERRORS),
        "missing_option": missing_option_probes(units, lexical),
    }


def calibrate_gate(
    units: Sequence[Unit],
    lexical_block: LexicalBlock,
    dense: DenseIndex | None,
    embedder: Embedder | None,
    cache: EmbeddingCache | None,
) -> tuple[Gate, int]:
    """The bundle's gate, and how many probe queries had to be embedded."""
    lexical = NumpyLexical(lexical_block)
    probes = probe_sets(units, lexical)
    texts = [t for group in probes.values() for t in group]

    def by_set(signals: list[Signals]) -> dict[str, list[Signals]]:
        out, start = {}, 0
        for name, group in probes.items():
            out[name] = signals[start : start + len(group)]
            start += len(group)
        return out

    def mode_gate(mode: str, found: dict[str, list[Signals]]) -> GateParams:
        extra = {k: v for k, v in found.items() if k not in ("covered", "off_topic", "salads")}
        return calibrate_mode(
            mode, found["covered"], found["off_topic"], found["salads"], others=extra
        )

    # With the units, as the runtime searches: coverage reads the best unit's terms.
    lexical_searcher = Searcher(lexical, units=units)
    lexical_gate = mode_gate("lexical", by_set([lexical_searcher.search(t).signals for t in texts]))
    embedded = 0
    hybrid_gate = None
    if dense is not None and embedder is not None and cache is not None:
        searcher = Searcher(lexical, DenseChannel(dense, None), units=units)
        vectors, embedded = _query_vectors(texts, embedder, cache)
        found = [searcher.search(t, vectors[i]).signals for i, t in enumerate(texts)]
        hybrid_gate = mode_gate("hybrid", by_set(found))
    return Gate(method=METHOD, lexical=lexical_gate, hybrid=hybrid_gate), embedded
