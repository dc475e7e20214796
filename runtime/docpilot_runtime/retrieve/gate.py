"""The refusal gate: one score from the raw channel signals, one calibrated threshold.

Rank fusion (RRF) decides the *order* of results but says nothing about whether the
corpus covers the question at all: its scores depend only on ranks. So the gate reads
the channels' raw signals instead:

* ``lexical_strength``: the best unit's BM25+ score as a fraction of the most the
  question's terms could score (each term's idf x (k1 + 1 + delta), and never less
  than two common terms could: ``lexical.ceiling_floor``). Terms the corpus has never
  seen count at the highest idf, so an off-topic question scores low.
* ``lexical_margin``: how far the best unit stands above the next four, relative to it.
* ``dense_strength``: the best unit's cosine between the query and its sign bits.
* ``dense_margin``: the best cosine minus the mean of the next five.
* ``lexical_coverage``: the share of the question's idf mass (its content terms, each
  weighted by its idf; a term the corpus never uses at the highest idf) that the best
  unit holds. A question about a neighbour of a covered feature ("rate limit per
  client IP" beside the middleware page) finds a unit that matches its common words
  but not the rare ones that name what it asks for.
* ``known_share``: the share of the same idf mass carried by terms the corpus uses at
  all: the subject of a near-miss ("Okta", "Confluence", "IPv6") is often a word no
  page contains.
* ``names_known``: 0 when the question writes a name no unit uses ("DBeaver",
  "NetBird"), else 1 (``names``): real off-topic questions are mostly about another
  product, asked in this one's words.

A covered question has one clear winner; an uncovered one finds many equally weak
passages — hence strength *and* margin. Each signal is placed on a corpus-relative
scale by calibration (0 = typical of questions the corpus cannot answer, 1 = typical of
questions it can), and the gate score is a fixed weighted mean of those positions. The
threshold is the median score of the missing-option probes in hybrid mode and a high
quantile of the off-topic probes' in lexical mode (see ``calibrate_mode``). Weights,
clips and the rest live in ``params.RetrievalParams``; which signals weigh what was
chosen on the real-thread sets' tune halves (``benchmarks/bench_gate_choice.py``).
Pure Python: the browser runs the lexical gate too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from docpilot_runtime.bundle.schema import Anchor, GateParams, Signals
from docpilot_runtime.retrieve.params import DEFAULT_PARAMS, RetrievalParams


def margin(scores: Sequence[float], rest: int) -> float:
    """Best score minus the mean of the next ``rest`` (0 when there is only one)."""
    if not scores:
        return 0.0
    others = scores[1 : 1 + rest]
    return scores[0] - (sum(others) / len(others) if others else 0.0)


def gate_score(
    signals: Signals, params: GateParams, tuning: RetrievalParams = DEFAULT_PARAMS
) -> float:
    """Weighted mean of each signal's position between the calibrated anchors."""
    total = 0.0
    for name, weight in params.weights.items():
        anchor = params.anchors[name]
        low, high = anchor.uncovered, anchor.covered
        span = high - low if high - low > 1e-9 else 1e-9
        position = (signals.get(name) - low) / span
        total += weight * min(max(position, tuning.clip_low), tuning.clip_high)
    return total


def shares_a_word(signals: Signals) -> bool:
    """Whether any term of the question occurs in the docs (``known_share`` > 0). One that
    shares none is refused whatever its score: nothing in the docs can be quoted for it,
    and the default embedder's cosine is noise on a script it was not trained on (a
    Japanese question on example-site scored 0.51, above most covered questions)."""
    return signals.known_share > 0.0


def confidence(score: float, threshold: float) -> int:
    """0-100: 50 at the threshold, about 75 for a typical covered question (score 1),
    100 for one clearly stronger; 0 at the typical uncovered question (score 0)."""
    if score < threshold:
        value = 50.0 * max(score, 0.0) / threshold if threshold > 0 else 0.0
    else:
        top = max(1.0 - threshold, 0.25)
        value = 50.0 + 25.0 * (score - threshold) / top
    return round(min(max(value, 0.0), 100.0))


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    if not n:
        return 0.0
    mid = n // 2
    return ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2.0


def quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile, as numpy's default (pure Python for the browser)."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    pos = (len(ordered) - 1) * q
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def calibrate_mode(
    mode: str,
    covered: Sequence[Signals],
    off_topic: Sequence[Signals],
    salads: Sequence[Signals],
    tuning: RetrievalParams = DEFAULT_PARAMS,
    others: Mapping[str, Sequence[Signals]] | None = None,
) -> GateParams:
    """Anchors and threshold for one mode.

    Anchors: each signal's median over the covered probes and over the uncovered ones
    (off-topic questions and word salads together), at least ``min_span`` apart, or the
    signal's own scale (``fixed_anchors``). Threshold: the ``gate_threshold[mode]``
    quantile of one probe set's scores (``others`` holds the sets beyond the three
    named here), clamped to ``threshold_range``. In hybrid mode that set is the
    questions about an option that does not exist, at their median: on the real-thread
    sets' tune halves that rule, with the weights, answered 0.96 of the covered
    questions and refused the most off-topic ones of every rule tried. In lexical mode
    it is the everyday off-topic questions (their 90th percentile): the keyword signals
    alone leave real covered questions close to every uncovered probe set, and this
    rule kept the clearly off-topic ones out while answering 0.93 of the covered
    (``benchmarks/bench_gate_choice.py``). Probes made from a unit's own words are
    easier than real questions, so no threshold is fitted between covered and
    uncovered probes.
    """
    weights = dict(tuning.gate_weights[mode])
    uncovered = [*off_topic, *salads]
    anchors = {}
    for name in weights:
        if name in tuning.fixed_anchors:
            low, high = tuning.fixed_anchors[name]
        else:
            low = _median([s.get(name) for s in uncovered])
            high = max(_median([s.get(name) for s in covered]), low + tuning.min_span[name])
        anchors[name] = Anchor(uncovered=low, covered=high)
    unthresholded = GateParams(weights=weights, anchors=anchors, threshold=0.0)
    sets = {"covered": covered, "off_topic": off_topic, "salads": salads, **(others or {})}
    probe_set, q = tuning.gate_threshold[mode]
    reference = sets.get(probe_set) or off_topic
    cut = quantile([gate_score(s, unthresholded, tuning) for s in reference], q)
    low_cut, high_cut = tuning.threshold_range
    return GateParams(
        weights=weights,
        anchors=anchors,
        threshold=min(max(cut, low_cut), high_cut),
        samples={name: len(group) for name, group in sets.items()},
    )


_DEFAULT_ANCHORS = {
    "lexical_strength": Anchor(uncovered=0.1, covered=0.5),
    "lexical_margin": Anchor(uncovered=0.1, covered=0.5),
    "dense_strength": Anchor(uncovered=0.15, covered=0.45),
    "dense_margin": Anchor(uncovered=0.01, covered=0.08),
    "lexical_coverage": Anchor(uncovered=0.15, covered=0.9),
    "known_share": Anchor(uncovered=0.5, covered=1.0),
    "names_known": Anchor(uncovered=0.0, covered=1.0),
}


def default_params(mode: str, tuning: RetrievalParams = DEFAULT_PARAMS) -> GateParams:
    """Uncalibrated fallback (a bundle with no calibrated gate): fixed anchors."""
    weights = dict(tuning.gate_weights[mode])
    return GateParams(
        weights=weights, anchors={n: _DEFAULT_ANCHORS[n] for n in weights}, threshold=0.5
    )
