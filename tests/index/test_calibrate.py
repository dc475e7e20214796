"""Build-time gate calibration on a real bundle: the probes, the anchors, the threshold,
and the probe-embedding cache that makes an unchanged rebuild embed nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from docpilot_runtime.bundle.read import load_bundle
from docpilot_runtime.bundle.schema import Bundle
from docpilot_runtime.embedders import load_embedder
from docpilot_runtime.index.cache import EmbeddingCache
from docpilot_runtime.index.calibrate import (
    COVERED_PROBES,
    OTHER_TOOL_PROBES,
    SALADS,
    calibrate_gate,
    covered_probes,
    other_tool_probes,
    probe_sets,
    salad_probes,
)
from docpilot_runtime.index.probes import OFF_TOPIC, OTHER_STACK_ERRORS, OTHER_TOOLS
from docpilot_runtime.index.units import Unit
from docpilot_runtime.retrieve.gate import gate_score
from docpilot_runtime.retrieve.names import names_known, unknown_names
from docpilot_runtime.retrieve.params import DEFAULT_PARAMS
from docpilot_runtime.retrieve.search import Searcher
from docpilot_runtime.retrieve.tokenize import tokenize
from docpilot_runtime.scoring.lexical_numpy import NumpyLexical
from docpilot_runtime.settings.embedder import EmbedderSpec
from docpilot_runtime.sites.loader import dense_index


@pytest.fixture(scope="module")
def bundle(example_site: Path) -> Bundle:
    return load_bundle(example_site)


@pytest.fixture(scope="module")
def units(bundle: Bundle) -> list[Unit]:
    return [Unit(u.id, u.url, u.title, u.breadcrumb, u.text, u.page) for u in bundle.units]


def test_covered_probes_use_their_units_words_and_ignore_unit_order(
    bundle: Bundle, units: list[Unit]
) -> None:
    lexical = NumpyLexical(bundle.lexical)
    probes = covered_probes(units, lexical)
    assert 0 < len(probes) <= COVERED_PROBES
    assert probes == covered_probes(list(reversed(units)), lexical)
    vocabulary = {t for u in units for t in tokenize(u.text)}
    for probe in probes:
        assert probe.endswith("?")
        assert len(set(tokenize(probe)) & vocabulary) >= 3, probe


def test_word_salads_need_five_units(bundle: Bundle, units: list[Unit]) -> None:
    lexical = NumpyLexical(bundle.lexical)
    salads = salad_probes(units, lexical)
    assert 0 < len(salads) <= SALADS
    assert salads == salad_probes(units, lexical)
    assert salad_probes(units[:4], lexical) == []


def test_lexical_calibration_lets_probes_through_and_keeps_most_off_topic_out(
    bundle: Bundle, units: list[Unit]
) -> None:
    gate, embedded = calibrate_gate(units, bundle.lexical, None, None, None)
    assert gate.hybrid is None and gate.lexical is not None and embedded == 0
    params = gate.lexical
    low, high = DEFAULT_PARAMS.threshold_range
    assert low <= params.threshold <= high
    searcher = Searcher(NumpyLexical(bundle.lexical), units=units)
    off = [gate_score(searcher.search(q).signals, params) >= params.threshold for q in OFF_TOPIC]
    _, quantile = DEFAULT_PARAMS.gate_threshold["lexical"]
    assert sum(off) <= round(len(OFF_TOPIC) * (1 - quantile)) + 1
    probes = covered_probes(units, NumpyLexical(bundle.lexical))
    passed = [gate_score(searcher.search(q).signals, params) >= params.threshold for q in probes]
    assert sum(passed) > len(passed) // 2
    assert gate == calibrate_gate(units, bundle.lexical, None, None, None)[0]


def test_hybrid_calibration_embeds_its_probes_once(
    bundle: Bundle, units: list[Unit], tmp_path: Path
) -> None:
    assert bundle.embedder is not None
    embedder = load_embedder(EmbedderSpec(name=bundle.embedder.name, dims=bundle.embedder.dims))
    assert embedder is not None
    cache = EmbeddingCache(tmp_path / "probes.msgpack", embedder.dims, lambda _m: None)
    dense = dense_index(bundle)
    gate, embedded = calibrate_gate(units, bundle.lexical, dense, embedder, cache)
    assert gate.hybrid is not None and set(gate.hybrid.weights) == set(
        DEFAULT_PARAMS.gate_weights["hybrid"]
    )
    samples = gate.hybrid.samples
    assert embedded == sum(samples.values()) and set(samples) >= {"covered", "other_tool"}
    cache.save()  # what the build does; the next build reads the file afresh
    reread = EmbeddingCache(tmp_path / "probes.msgpack", embedder.dims, lambda _m: None)
    again, embedded_again = calibrate_gate(units, bundle.lexical, dense, embedder, reread)
    assert embedded_again == 0 and again == gate
    assert gate.hybrid == bundle.gate.hybrid  # the build calibrated the same way


def test_probes_shaped_like_real_off_topic_questions_name_what_the_site_does_not(
    bundle: Bundle, units: list[Unit]
) -> None:
    lexical = NumpyLexical(bundle.lexical)
    sets = probe_sets(units, lexical)
    assert set(sets) == {"covered", "off_topic", "salads", "other_tool", "other_error",
                         "missing_option"}
    tools = sets["other_tool"]
    assert 0 < len(tools) <= OTHER_TOOL_PROBES and tools == other_tool_probes(units, lexical)
    for probe in tools:
        named = [t for t in OTHER_TOOLS if t in probe]
        assert named and all(lexical.document_frequency(w) == 0 for w in tokenize(named[0]))
    assert sets["other_error"] == list(OTHER_STACK_ERRORS)
    for probe in sets["missing_option"]:
        option = probe.split("`")[1]
        assert lexical.document_frequency(option) == 0, option  # no unit has that option


def test_names_the_docs_never_use_are_a_signal_of_their_own(bundle: Bundle) -> None:
    lexical = NumpyLexical(bundle.lexical)
    assert unknown_names(lexical, "How do I serve DocPilot behind Caddy with NetBird?") == [
        "caddy", "netbird"]
    assert names_known(lexical, "How do I exclude a page from the assistant?") == 1.0
    assert names_known(lexical, "Does it work with Jekyll?") == 0.0
    assert names_known(lexical, "Is port 8443 used in v2.7.1?") == 1.0  # numbers name nothing
