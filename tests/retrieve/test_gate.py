"""The refusal gate: signals placed between calibrated anchors, one threshold, confidence.

Pure Python: this file also runs under Pyodide (``tools/pyodide/run-tests.mjs``).
"""

from __future__ import annotations

import dataclasses

import pytest
from docpilot_runtime.bundle.schema import Anchor, GateParams, Signals, UnitRecord
from docpilot_runtime.retrieve.gate import (
    calibrate_mode,
    confidence,
    default_params,
    gate_score,
    margin,
    quantile,
    shares_a_word,
)
from docpilot_runtime.retrieve.lexical import LexicalDoc, LexicalIndex, build_lexical
from docpilot_runtime.retrieve.params import DEFAULT_PARAMS
from docpilot_runtime.retrieve.search import Searcher, coverage_signals, unit_terms


def test_margin_is_best_minus_the_mean_of_the_next() -> None:
    assert margin([5.0, 3.0, 1.0], 4) == pytest.approx(3.0)
    assert margin([2.0], 4) == 2.0 and margin([], 4) == 0.0


def test_quantile_interpolates_linearly() -> None:
    assert quantile([1.0, 2.0, 3.0, 4.0], 0.5) == pytest.approx(2.5)
    assert quantile([0.0, 10.0], 0.95) == pytest.approx(9.5)


def test_gate_score_places_signals_between_the_anchors_and_clips() -> None:
    anchor = Anchor(uncovered=0.2, covered=0.6)
    params = GateParams(
        weights={"lexical_strength": 0.7, "lexical_margin": 0.3},
        anchors={"lexical_strength": anchor, "lexical_margin": anchor},
        threshold=0.5,
    )
    assert gate_score(Signals(0.2, 0.2), params) == pytest.approx(0.0)
    assert gate_score(Signals(0.6, 0.6), params) == pytest.approx(1.0)
    assert gate_score(Signals(50.0, 50.0), params) == pytest.approx(1.5)


def test_confidence_is_fifty_at_the_threshold_and_bounded() -> None:
    assert confidence(0.4, 0.4) == 50
    assert confidence(0.0, 0.4) == 0 and confidence(5.0, 0.4) == 100
    assert confidence(1.0, 0.4) == 75


def test_clips_come_from_the_retrieval_params() -> None:
    anchor = Anchor(uncovered=0.0, covered=1.0)
    params = GateParams(
        weights={"lexical_strength": 1.0}, anchors={"lexical_strength": anchor}, threshold=0.5
    )
    wide = dataclasses.replace(DEFAULT_PARAMS, clip_high=3.0, clip_low=-5.0)
    assert gate_score(Signals(10.0), params) == pytest.approx(DEFAULT_PARAMS.clip_high)
    assert gate_score(Signals(10.0), params, wide) == pytest.approx(3.0)
    assert gate_score(Signals(-10.0), params, wide) == pytest.approx(-5.0)


def test_anchors_keep_their_minimum_span_when_probes_barely_differ() -> None:
    covered = [Signals(known_share=0.91, names_known=1.0)] * 5
    uncovered = [Signals(known_share=0.90, names_known=1.0)] * 5
    params = calibrate_mode("lexical", covered, uncovered, uncovered)
    span = params.anchors["known_share"]
    assert span.covered - span.uncovered == pytest.approx(DEFAULT_PARAMS.min_span["known_share"])
    # A signal on a scale of its own keeps that scale, whatever the probes' medians.
    assert params.anchors["names_known"] == Anchor(*DEFAULT_PARAMS.fixed_anchors["names_known"])
    assert (
        DEFAULT_PARAMS.threshold_range[0] <= params.threshold <= DEFAULT_PARAMS.threshold_range[1]
    )
    assert params.samples == {"covered": 5, "off_topic": 5, "salads": 5}


def test_uncalibrated_fallback_weighs_only_its_modes_signals() -> None:
    lexical, hybrid = default_params("lexical"), default_params("hybrid")
    assert set(lexical.anchors) == set(DEFAULT_PARAMS.gate_weights["lexical"])
    assert not any(name.startswith("dense") for name in lexical.anchors)
    assert set(hybrid.weights) == set(DEFAULT_PARAMS.gate_weights["hybrid"])
    assert sum(hybrid.weights.values()) == pytest.approx(1.0)
    dense_only = Signals(dense_strength=1.0, dense_margin=1.0)
    assert gate_score(dense_only, lexical) < gate_score(dense_only, hybrid)


def test_a_question_sharing_no_word_with_the_docs_never_passes() -> None:
    """Whatever its score: the dense channel alone cannot carry it (a Japanese question on
    an English site has a cosine like a covered question's)."""
    params = default_params("hybrid")
    foreign = Signals(dense_strength=0.9, dense_margin=0.2, names_known=1.0, known_share=0.0)
    assert gate_score(foreign, params) >= params.threshold  # the score alone would pass it
    assert not shares_a_word(foreign)
    assert shares_a_word(dataclasses.replace(foreign, known_share=0.2))


_UNITS = [
    UnitRecord(
        "a/#proxies", "a/#proxies", "Proxies", ("Advanced",), "Route requests via a proxy.", 0
    ),
    UnitRecord(
        "a/#timeouts", "a/#timeouts", "Timeouts", ("Advanced",), "Set a connect timeout.", 0
    ),
    UnitRecord(
        "b/#limits", "b/#limits", "Pool limits", ("Clients",), "Limit pooled connections.", 1
    ),
]


def _index() -> LexicalIndex:
    return LexicalIndex(
        build_lexical([LexicalDoc(u.title, " ".join(u.breadcrumb), u.text) for u in _UNITS])
    )


def test_coverage_is_the_idf_share_the_best_unit_holds() -> None:
    index = _index()
    best = unit_terms(_UNITS[1])
    assert coverage_signals(index, ["connect", "timeout"], best) == pytest.approx((1.0, 1.0))
    # "proxy" is in the corpus but not in the best unit: coverage drops, known share stays.
    held, known = coverage_signals(index, ["timeout", "proxy"], best)
    assert 0.0 < held < 1.0 and known == pytest.approx(1.0)
    # A word no unit uses counts at the highest idf, against both shares.
    held_unseen, known_unseen = coverage_signals(index, ["timeout", "okta"], best)
    assert held_unseen < held and known_unseen < 1.0
    assert coverage_signals(index, [], best) == (0.0, 0.0)


def test_searcher_reads_coverage_from_its_best_unit() -> None:
    searcher = Searcher(_index(), units=_UNITS)
    covered = searcher.search("How do I set a connect timeout?").signals
    neighbour = searcher.search("How do I set a timeout for Okta sign-in?").signals
    assert covered.lexical_coverage == pytest.approx(1.0) and covered.known_share == 1.0
    assert neighbour.lexical_coverage < 0.5 and neighbour.known_share < 0.5
    # With no units to read, the searcher cannot tell and coverage reads 0.
    assert Searcher(_index()).search("connect timeout").signals.lexical_coverage == 0.0
