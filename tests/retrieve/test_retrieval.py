"""Stage 3 on real bundles: both channels, fusion, the gate, the composed channel,
the reader's page first, and lexical mode."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from docpilot_runtime.bundle.read import load_bundle
from docpilot_runtime.bundle.schema import Signals
from docpilot_runtime.bundle.write import encode_static
from docpilot_runtime.index.build import index_site
from docpilot_runtime.reply.results import ask_without_model
from docpilot_runtime.retrieve.gate import calibrate_mode, confidence, gate_score
from docpilot_runtime.retrieve.lexical import (
    LexicalDoc,
    LexicalIndex,
    build_lexical,
    query_tf_weight,
)
from docpilot_runtime.retrieve.params import DEFAULT_PARAMS
from docpilot_runtime.retrieve.search import rrf
from docpilot_runtime.retrieve.site import Site
from docpilot_runtime.retrieve.tokenize import query_terms, search_term_counts
from docpilot_runtime.scoring.dense import DenseIndex, pack_vectors, sign_bits
from docpilot_runtime.scoring.lexical_numpy import NumpyLexical
from docpilot_runtime.settings.index import IndexOptions, embedder_spec
from docpilot_runtime.shared.types import AskRequest, HistoryItem
from docpilot_runtime.sites.loader import load_site

COVERED = "How do I exclude a page from the assistant?"
OFF_TOPIC = "How should I prune an apple tree in late winter?"


@pytest.fixture(scope="session")
def example(example_site: Path) -> Site:
    return load_site(example_site, "/")


@pytest.fixture(scope="session")
def lexical_example(example_site: Path, tmp_path_factory: pytest.TempPathFactory) -> Site:
    """example-site re-indexed as a lexical-only bundle (embedder: none)."""
    copy = tmp_path_factory.mktemp("lexical") / "site"
    shutil.copytree(example_site, copy)
    index_site(copy, IndexOptions(embedder=embedder_spec("none", "test"), site_name="DocPilot"))
    return load_site(copy, "/")


def test_numpy_bm25_ranks_exactly_like_the_pure_python_reference(example_site: Path) -> None:
    block = load_bundle(example_site).lexical
    pure, fast = LexicalIndex(block), NumpyLexical(block)
    questions = [COVERED, OFF_TOPIC, "max_section_chars default", "快速入门 安装", "SSE events"]
    for question in questions:
        terms = query_terms(question)
        assert pure.search(terms, 40) == fast.search(terms, 40), question


def test_numpy_bm25_ranks_like_the_reference_with_query_term_weights(example_site: Path) -> None:
    block = load_bundle(example_site).lexical
    pure, fast = LexicalIndex(block), NumpyLexical(block)
    questions = [
        "exclude a page, exclude the page, excluded pages from the assistant",
        "SSE events: which events, and in which order do events arrive?",
    ]
    for question in questions:
        counts = search_term_counts(question)
        weights = {t: query_tf_weight(n, DEFAULT_PARAMS.query_tf_k3) for t, n in counts.items()}
        assert max(weights.values()) > 1.0  # each question repeats a word
        terms = list(weights)
        assert pure.search(terms, 40, weights) == fast.search(terms, 40, weights), question
        assert pure.search(terms, 40, weights) != pure.search(terms, 40), question


def test_query_term_weight_is_one_for_a_word_used_once_and_saturates() -> None:
    assert query_tf_weight(1, 4.0) == 1.0
    assert query_tf_weight(1, 0.0) == query_tf_weight(3, 0.0) == 1.0
    assert 1.0 < query_tf_weight(2, 4.0) < query_tf_weight(3, 4.0) < 5.0
    assert query_tf_weight(10_000, 4.0) == pytest.approx(5.0, rel=1e-3)


def test_numpy_bm25_matches_reference_on_random_corpus_with_many_units() -> None:
    rng = random.Random(7)
    words = [f"w{i}" for i in range(300)]
    docs = [
        LexicalDoc(title=rng.choice(words), breadcrumb="", text=" ".join(rng.choices(words, k=30)))
        for _ in range(70000)  # past 65,535 units: 32-bit unit ids
    ]
    block = build_lexical(docs)
    assert block.doc_dtype == "u4"
    pure, fast = LexicalIndex(block), NumpyLexical(block)
    for _ in range(5):
        terms = rng.sample(words, 3)
        assert pure.search(terms, 20) == fast.search(terms, 20)


def test_rrf_sums_reciprocal_ranks() -> None:
    fused = rrf([(1.0, [5, 7, 9]), (1.0, [7, 5])], k=60)
    assert [u for u, _ in fused] == [5, 7, 9]  # 5 and 7 tie; the earlier unit wins
    assert fused[0][1] == pytest.approx(1 / 61 + 1 / 62)


def test_dense_scan_rescoring_finds_the_nearest_vector() -> None:
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((500, 256)).astype(np.float32)
    dense = DenseIndex.from_bytes(
        pack_vectors(sign_bits(vectors)), 500, 256, np.zeros(256, np.float32)
    )
    query = vectors[123] + 0.3 * rng.standard_normal(256).astype(np.float32)
    rows, scores = dense.search(query, candidates=50)
    assert rows[0] == 123
    assert scores[0] > scores[1]
    naive = (np.unpackbits(sign_bits(vectors), axis=1) != (query > 0)).sum(axis=1)
    assert (dense.hamming(query) == naive).all()


def test_covered_question_passes_the_gate_with_both_channels(example: Site) -> None:
    result = example.retrieve(AskRequest(question=COVERED))
    assert result.retriever == "hybrid"
    assert result.passed and result.confidence >= 50
    assert result.ranking.lexical and result.ranking.dense, "both channels always run"
    assert len(result.ranked_ids()) >= 10


def test_off_topic_question_is_refused_with_closest_pages(example: Site) -> None:
    result = example.retrieve(AskRequest(question=OFF_TOPIC))
    assert not result.passed and result.confidence < 50
    pages = result.closest_pages()
    assert 3 <= len(pages) <= 5 and len({p.url for p in pages}) == len(pages)


def test_confidence_is_null_free_and_bounded(example: Site) -> None:
    for question in (COVERED, OFF_TOPIC, "widget", "x"):
        value = example.retrieve(AskRequest(question=question)).confidence
        assert 0 <= value <= 100


FOLLOW_UPS = [
    ("How does the refusal gate decide?", "and is that so for the other one too?"),
    ("How does the refusal gate decide?", "and what is the threshold then?"),
    ("How do I configure the Anthropic provider?", "and how much does that cost?"),
    ("Which embedders can I choose from?", "and which one for Chinese then?"),
]


def test_follow_up_is_rescued_by_the_composed_channel_only_after_an_answered_turn(
    example: Site,
) -> None:
    rescued = 0
    for earlier, follow_up in FOLLOW_UPS:
        alone = example.retrieve(AskRequest(question=follow_up))
        answered = (HistoryItem(question=earlier, kind="answer"),)
        composed = example.retrieve(AskRequest(question=follow_up, history=answered))
        refused = (HistoryItem(question=earlier, kind="refusal"),)
        after_refusal = example.retrieve(AskRequest(question=follow_up, history=refused))
        assert composed.passed or not alone.passed, "the composed channel never loses a pass"
        assert composed.rescued == (composed.passed and not alone.passed)
        # A refused question never anchors the composed channel: as if there were no history.
        assert (after_refusal.passed, after_refusal.rescued) == (alone.passed, False)
        assert after_refusal.score == pytest.approx(alone.score)
        rescued += composed.rescued
    assert rescued >= 1, "no elliptic follow-up was rescued by the composed channel"


def test_composed_channel_reaches_back_past_a_rescued_turn(example: Site) -> None:
    history = (
        HistoryItem(question="How does the refusal gate decide?", kind="answer"),
        HistoryItem(question="and what is the threshold then?", kind="answer", rescued=True),
    )
    result = example.retrieve(
        AskRequest(question="and is it the same in lexical mode?", history=history)
    )
    assert result.passed


def test_current_page_units_join_the_models_input_first_without_changing_confidence(
    example: Site,
) -> None:
    plain = example.retrieve(AskRequest(question=COVERED))
    on_page = example.retrieve(AskRequest(question=COVERED, page="/guides/static-sites/"))
    first_two = [example.bundle.units[u].url for u in on_page.model_order()[:2]]
    assert all(url.startswith("/guides/static-sites/") for url in first_two)
    assert on_page.confidence == plain.confidence and on_page.score == plain.score
    assert on_page.ranked_ids() == plain.ranked_ids()


@pytest.mark.parametrize("site_name", ["example", "lexical_example"])
def test_passages_on_an_unrelated_page_cite_only_what_ranks_on_its_own(
    site_name: str, request: pytest.FixtureRequest
) -> None:
    """Issue 9 (2): page-first used to put two static-sites sections first in `passages`."""
    site: Site = request.getfixturevalue(site_name)
    plain = ask_without_model(site, AskRequest(question=COVERED))
    on_page = ask_without_model(site, AskRequest(question=COVERED, page="/guides/static-sites/"))
    assert on_page.kind == "passages"
    cited = [c.url for c in on_page.citations]
    assert not cited[0].startswith("/guides/static-sites/"), cited
    assert cited == [c.url for c in plain.citations]
    assert on_page.markdown == plain.markdown


def test_lexical_bundle_answers_in_lexical_mode(lexical_example: Site) -> None:
    assert lexical_example.mode == "lexical"
    covered = lexical_example.retrieve(AskRequest(question=COVERED))
    off = lexical_example.retrieve(AskRequest(question=OFF_TOPIC))
    assert covered.retriever == "lexical" and covered.passed
    assert not off.passed
    assert lexical_example.describe()["mode"] == "lexical"
    calibrated = lexical_example.bundle.gate.lexical
    assert calibrated is not None
    assert lexical_example.gate_params("lexical").threshold == pytest.approx(calibrated.threshold)


def test_failing_query_embedder_falls_back_to_lexical_mode(example_site: Path) -> None:
    site = load_site(example_site, "/")

    class Broken:
        name, model, dims, needs_centering = "wordllama", "l2_supercat_256", 256, False

        def embed_query(self, text: str) -> np.ndarray:
            raise OSError("embedding service down")

        def embed_passages(self, texts: list[str]) -> np.ndarray:
            raise OSError("embedding service down")

    assert site.mode == "hybrid" and site.searcher.dense is not None
    site.searcher.dense.embed_query = Broken().embed_query  # type: ignore[attr-defined]
    result = site.retrieve(AskRequest(question=COVERED))
    assert result.retriever == "lexical" and result.passed
    assert not site.retrieve(AskRequest(question=OFF_TOPIC)).passed


def test_bundle_carries_calibrated_thresholds_for_both_modes(example_site: Path) -> None:
    gate = load_bundle(example_site).gate
    for mode in ("hybrid", "lexical"):
        params = getattr(gate, mode)
        assert 0.1 <= params.threshold <= 0.75
        assert params.samples["off_topic"] >= 50


def test_gate_threshold_sits_above_most_off_topic_scores() -> None:
    # The lexical gate's signals (``gate_weights["lexical"]``), names known on both sides.
    covered = [Signals(known_share=0.6 + i / 100, lexical_strength=0.5) for i in range(20)]
    uncovered = [Signals(known_share=0.1 + i / 100, lexical_strength=0.1) for i in range(20)]
    params = calibrate_mode("lexical", covered, uncovered, uncovered)
    scores = [gate_score(s, params) for s in uncovered]
    assert sum(s >= params.threshold for s in scores) <= 2
    assert all(gate_score(s, params) >= params.threshold for s in covered)
    assert confidence(params.threshold, params.threshold) == 50


# --- What the turn core and the server's turn import ---------------------------------------

HEAVY = (
    "numpy",
    "httpx",
    "lxml",
    "mkdocs",
    "docpilot_runtime.browser.widget",
    "docpilot_runtime.browser.install",
)


def _loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter has loaded after running ``code``."""
    script = f"import sys\n{code}\nprint('\\n'.join(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


def test_a_lexical_turn_through_the_core_loads_no_numpy_httpx_lxml_mkdocs_or_installer(
    lexical_example: Site, tmp_path: Path
) -> None:
    static = tmp_path / "static.json"
    static.write_bytes(encode_static(lexical_example.bundle))
    body = json.dumps({"question": COVERED})
    code = "\n".join(
        [
            "import json, pathlib",
            "from docpilot_runtime.browser import worker as browser",
            f"browser.load_static(pathlib.Path({str(static)!r}).read_bytes())",
            f"result = json.loads(browser.ask_static({body!r}))",
            "assert result['kind'] == 'passages', result",
        ]
    )
    loaded = _loaded_after(code)
    assert "docpilot_runtime.retrieve.site" in loaded
    assert not loaded & set(HEAVY), loaded & set(HEAVY)


def test_importing_the_servers_turn_loads_neither_the_installer_nor_mkdocs_nor_lxml() -> None:
    loaded = _loaded_after("import docpilot_runtime.turn")
    assert "docpilot_runtime.turn" in loaded
    heavy = {"lxml", "mkdocs", "docpilot_runtime.browser.widget", "docpilot_runtime.browser.install"}
    assert not loaded & heavy, loaded & heavy
