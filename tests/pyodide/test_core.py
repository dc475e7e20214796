"""The browser/edge core on its own: tokenizer, BM25+, gate, passages and static mode.

No numpy, no msgpack, no built site: everything here is made in the test from pure
functions, so the same file runs under CPython and under Pyodide in Node
(`tools/pyodide/run-tests.mjs`), where the widget's worker runs it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from docpilot_runtime import browser
from docpilot_runtime.gate import (
    Signals,
    calibrate_mode,
    confidence,
    gate_score,
    margin,
    quantile,
)
from docpilot_runtime.lexical import LexicalDoc, LexicalIndex, build_lexical, ceiling_floor
from docpilot_runtime.passages import excerpt, passages_markdown
from docpilot_runtime.tokenize import query_terms, stem, tokenize

PAGES = [
    {"url": "/install/", "title": "Installation"},
    {"url": "/auth/", "title": "Authentication"},
    {"url": "/deploy/", "title": "Deploying"},
    {"url": "/faq/", "title": "FAQ"},
]
# (page, anchor, title, text): a small docs site, one unit per section.
SECTIONS = [
    (0, "installation", "Installation", "Install the package with pip. Python 3.11 or later."),
    (0, "upgrading", "Upgrading", "Upgrade with pip install --upgrade. Read the changelog first."),
    (
        1,
        "api-keys",
        "API keys",
        "Send the key in the X-API-Key header. Keys are created in the dashboard.\n\n"
        '```bash\ncurl -H "X-API-Key: $KEY" https://api.example/v1/items\n```',
    ),
    (1, "rotating-keys", "Rotating keys", "Rotate a key from the dashboard. Old keys expire."),
    (1, "oauth", "OAuth", "OAuth 2.0 authorization code flow with PKCE for browser apps."),
    (2, "docker", "Docker", "Run the container image with docker run and mount the config."),
    (2, "kubernetes", "Kubernetes", "Deploy with the Helm chart; set replicas and resources."),
    (2, "environment", "Environment variables", "Every setting can be an environment variable."),
    (3, "pricing", "Is it free?", "The open-source edition is free. Support plans cost extra."),
    (3, "languages", "Which languages?", "Docs in English and 日本語 (Japanese) are indexed."),
    (3, "offline", "Does it work offline?", "Yes: the static build needs no network at all."),
    (3, "contact", "Contact", "Write to the maintainers through the issue tracker."),
]
COVERED = ["How do I rotate an API key?", "deploy with kubernetes helm chart", "install with pip"]
OFF_TOPIC = [
    "How should I prune an apple tree in late winter?",
    "best sourdough bread recipe",
    "who won the football match yesterday",
]


def _units() -> list[dict[str, Any]]:
    return [
        {
            "id": f"{PAGES[page]['url']}#{anchor}",
            "url": f"{PAGES[page]['url']}#{anchor}",
            "title": title,
            "breadcrumb": [PAGES[page]["title"]],
            "text": text,
            "page": page,
        }
        for page, anchor, title, text in SECTIONS
    ]


def _lexical() -> dict[str, Any]:
    docs = [
        LexicalDoc(title=u["title"], breadcrumb=" ".join(u["breadcrumb"]), text=u["text"])
        for u in _units()
    ]
    return build_lexical(docs)


def _bundle(gate: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "format": "docpilot-bundle",
        "version": 1,
        "site": {"name": "Acme", "url": ""},
        "pages": [{**p, "ids": []} for p in PAGES],
        "units": _units(),
        "lexical": _lexical(),
        "gate": {"lexical": gate} if gate else {},
    }


@pytest.fixture(scope="module")
def site() -> browser.StaticSite:
    """Static mode over the small site, its gate calibrated on probes like the build's."""
    uncalibrated = browser.StaticSite(
        json.loads(browser.static_index_json(_bundle(), "0" * 64)), "t"
    )
    covered = [uncalibrated.search(q).signals for q in COVERED + [s[2] for s in SECTIONS]]
    uncovered = [uncalibrated.search(q).signals for q in OFF_TOPIC]
    gate = calibrate_mode("lexical", covered, uncovered, uncovered)
    text = browser.static_index_json(_bundle(gate), "ab" * 32).decode("utf-8")
    browser.load_static(text, prefix="/")
    assert browser._site is not None
    return browser._site


def ask(body: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(browser.ask_static(json.dumps(body)))
    return result


# --- tokenize ------------------------------------------------------------------------------


def test_compounds_are_kept_whole_and_split_into_parts() -> None:
    tokens = tokenize("Send X-API-Key to v2.1.0 in mkdocs.yml")
    assert {"x-api-key", "api", "key", "v2.1.0", "mkdocs.yml", "mkdoc", "yml"} <= set(tokens)


def test_width_and_case_variants_meet() -> None:
    assert tokenize("Ｆｕｌｌ STRASSE") == tokenize("full straße")


def test_unspaced_scripts_become_bigrams_and_single_latin_letters_drop() -> None:
    assert tokenize("快速入门") == ["快速", "速入", "入门"]
    assert tokenize("a b 7") == ["7"]


def test_light_stemmer_joins_inflections_but_keeps_short_words() -> None:
    assert {stem(w) for w in ("configure", "configuring", "configured", "configuration")} == {
        "configur"
    }
    assert stem("running") == "run" and stem("install") == "install" and stem("uses") == "use"
    assert query_terms("keys KEY key") == ["key"]


# --- lexical -------------------------------------------------------------------------------


def test_build_is_deterministic_and_gap_encoded() -> None:
    block = _lexical()
    assert block == _lexical()
    assert block["doc_dtype"] == "u2" and block["doc_encoding"] == "gaps"
    index = LexicalIndex(block)
    assert index.count == len(SECTIONS)
    assert index.document_frequency("key") == 2  # two sections name it: API keys, rotating
    assert index.document_frequency("nowhere") == 0


def test_a_title_match_outranks_a_passing_mention() -> None:
    index = LexicalIndex(_lexical())
    ranked = index.search(query_terms("docker"))
    assert [u for u, _ in ranked] == [5]
    ranked = index.search(query_terms("dashboard keys"))
    assert ranked[0][0] in (2, 3) and {u for u, _ in ranked[:2]} == {2, 3}


def test_ties_go_to_the_earlier_unit_and_limit_cuts() -> None:
    index = LexicalIndex(build_lexical([LexicalDoc("same", "", "words")] * 5))
    ranked = index.search(["same"], limit=3)
    assert [u for u, _ in ranked] == [0, 1, 2]
    assert len({s for _, s in ranked}) == 1


def test_ceiling_floor_grows_with_the_corpus() -> None:
    assert 0 < ceiling_floor(20) < ceiling_floor(2000)


# --- gate ----------------------------------------------------------------------------------


def test_margin_is_best_minus_the_mean_of_the_next() -> None:
    assert margin([5.0, 3.0, 1.0], 4) == pytest.approx(3.0)
    assert margin([2.0], 4) == 2.0 and margin([], 4) == 0.0


def test_quantile_interpolates_linearly() -> None:
    assert quantile([1.0, 2.0, 3.0, 4.0], 0.5) == pytest.approx(2.5)
    assert quantile([0.0, 10.0], 0.95) == pytest.approx(9.5)


def test_gate_score_places_signals_between_the_anchors_and_clips() -> None:
    anchor = {"uncovered": 0.2, "covered": 0.6}
    params = {
        "weights": {"lexical_strength": 0.7, "lexical_margin": 0.3},
        "anchors": {"lexical_strength": anchor, "lexical_margin": anchor},
    }
    assert gate_score(Signals(0.2, 0.2), params) == pytest.approx(0.0)
    assert gate_score(Signals(0.6, 0.6), params) == pytest.approx(1.0)
    assert gate_score(Signals(50.0, 50.0), params) == pytest.approx(1.5)


def test_confidence_is_fifty_at_the_threshold_and_bounded() -> None:
    assert confidence(0.4, 0.4) == 50
    assert confidence(0.0, 0.4) == 0 and confidence(5.0, 0.4) == 100
    assert confidence(1.0, 0.4) == 75


def test_calibrated_threshold_separates_the_small_sites_probes(site: browser.StaticSite) -> None:
    for question in COVERED:
        assert site.judge(site.search(question))[0], question
    for question in OFF_TOPIC:
        assert not site.judge(site.search(question))[0], question


# --- passages ------------------------------------------------------------------------------


def test_every_passage_block_ends_with_its_citation_marker() -> None:
    units = [
        browser.StaticUnit(u["id"], u["url"], u["title"], u["text"], u["page"]) for u in _units()
    ]
    markdown = passages_markdown("How do I rotate an API key?", units[2:4])
    blocks = markdown.split("\n\n**")
    assert blocks[0].startswith("**API keys**: ") and "[1]" in blocks[0]
    assert blocks[1].startswith("Rotating keys**: ") and blocks[1].endswith("[2]")


def test_excerpt_keeps_the_relevant_code_block() -> None:
    text = _units()[2]["text"]
    assert "```bash" in excerpt("curl with the X-API-Key header", text)
    assert "```" not in excerpt("dashboard", "Made in the dashboard.\n\n```\nunrelated()\n```")


# --- static mode ---------------------------------------------------------------------------


def test_covered_question_gets_cited_passages(site: browser.StaticSite) -> None:
    result = ask({"question": "How do I rotate an API key?"})
    assert result["kind"] == "passages" and result["retriever"] == "lexical"
    assert result["citations"][0]["id"] == "/auth/#rotating-keys"
    assert [c["n"] for c in result["citations"]] == list(range(1, len(result["citations"]) + 1))
    assert result["confidence"] >= 50
    assert result["ranked"][0] == "/auth/#rotating-keys"
    assert result["bundle_hash"] == "ab" * 32


def test_off_topic_question_is_refused_with_distinct_closest_pages(
    site: browser.StaticSite,
) -> None:
    result = ask({"question": "How should I prune an apple tree in late winter?"})
    assert result["kind"] == "refusal" and result["confidence"] < 50
    urls = [p["url"] for p in result["closest"]]
    assert len(urls) == len(set(urls)) <= 5
    assert "does not seem to cover this" in result["markdown"]
    assert result["citations"] == []


def test_greeting_and_credential_end_the_turn_before_retrieval(site: browser.StaticSite) -> None:
    hello = ask({"question": "hello"})
    assert hello["kind"] == "social" and "Acme" in hello["markdown"]
    assert hello["confidence"] is None and hello["ranked"] == []
    secret = "ghp_R7x2Lq9Vz4Mw8Kc1Tb6Hn3Pd5Fy0Gs2Ja8Ue"
    leaked = ask({"question": "why does this fail?", "quote": f"token {secret}"})
    assert leaked["kind"] == "credential" and leaked["credential_kind"]
    assert secret not in json.dumps(leaked) and leaked["ranked"] == []


def test_the_readers_page_comes_first_without_changing_confidence(
    site: browser.StaticSite,
) -> None:
    plain = ask({"question": "dashboard keys"})
    on_page = ask({"question": "dashboard keys", "page": "/deploy/"})
    assert on_page["ranked"][0].startswith("/deploy/")
    assert on_page["confidence"] == plain["confidence"]


def test_a_bad_request_gets_the_servers_error_object(site: browser.StaticSite) -> None:
    assert ask({"question": "   "}) == {"error": {"field": "question", "message": "is empty"}}
    assert ask({"question": "hi", "history": "no"})["error"]["field"] == "history"


def test_check_finds_a_credential_and_its_span() -> None:
    question = "my token is ghp_R7x2Lq9Vz4Mw8Kc1Tb6Hn3Pd5Fy0Gs2Ja8Ue thanks"
    found = browser.check(question)["credential"]
    assert found is not None
    assert question[found["start"] : found["end"]].startswith("ghp_")
    assert browser.check("what is a GitHub token?") == {"credential": None, "dropped": []}


def test_passages_treat_list_items_as_their_own_sentences() -> None:
    from docpilot_runtime.passages import excerpt

    text = "Hosts all work.\n- Keep the folder in place.\n- Serve wasm as application/wasm."
    quoted = excerpt("keep folder", text)
    assert "- Keep" not in quoted and "Keep the folder in place." in quoted
