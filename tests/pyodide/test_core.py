"""The browser/edge core on its own: tokenizer, BM25+, gate, passages and static mode.

No numpy, no msgpack, no built site: everything here is made in the test from pure
functions, so the same file runs under CPython and under Pyodide in Node
(`tools/pyodide/run-tests.mjs`), where the widget's worker runs it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from docpilot_runtime.browser import worker as browser
from docpilot_runtime.bundle.read import decode_static
from docpilot_runtime.bundle.schema import (
    Bundle,
    Gate,
    GateParams,
    LexicalBlock,
    Page,
    SiteInfo,
    UnitRecord,
)
from docpilot_runtime.bundle.shards import MANIFEST_NAME, encode_shards
from docpilot_runtime.bundle.write import encode_static
from docpilot_runtime.reply.passages import excerpt, passages_markdown
from docpilot_runtime.retrieve.gate import calibrate_mode
from docpilot_runtime.retrieve.lexical import LexicalDoc, LexicalIndex, build_lexical, ceiling_floor
from docpilot_runtime.retrieve.site import Site
from docpilot_runtime.retrieve.tokenize import query_terms
from docpilot_runtime.shared.framing import FRAMINGS
from docpilot_runtime.shared.types import AskRequest

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


def _units() -> list[UnitRecord]:
    return [
        UnitRecord(
            id=f"{PAGES[page]['url']}#{anchor}",
            url=f"{PAGES[page]['url']}#{anchor}",
            title=title,
            breadcrumb=(PAGES[page]["title"],),
            text=text,
            page=page,
        )
        for page, anchor, title, text in SECTIONS
    ]


def _lexical() -> LexicalBlock:
    docs = [
        LexicalDoc(title=u.title, breadcrumb=" ".join(u.breadcrumb), text=u.text) for u in _units()
    ]
    return build_lexical(docs)


def _bundle(gate: GateParams | None = None, digest: str = "0" * 64) -> Bundle:
    return Bundle(
        path="t",
        hash=digest,
        version=2,
        generator="test",
        site=SiteInfo(name="Acme"),
        embedder=None,
        vectors=None,
        pages=tuple(Page(url=p["url"], title=p["title"], ids=frozenset()) for p in PAGES),
        units=tuple(_units()),
        lexical=_lexical(),
        gate=Gate(method="test", lexical=gate),
    )


@pytest.fixture(scope="module")
def site() -> Site:
    """Static mode over the small site, its gate calibrated on probes like the build's."""
    uncalibrated = browser.static_site(encode_static(_bundle()))
    covered = [uncalibrated.search(q).signals for q in COVERED + [s[2] for s in SECTIONS]]
    uncovered = [uncalibrated.search(q).signals for q in OFF_TOPIC]
    gate = calibrate_mode("lexical", covered, uncovered, uncovered)
    text = encode_static(_bundle(gate, "ab" * 32)).decode("utf-8")
    assert decode_static(text).gate.lexical == gate
    browser.load_static(text, prefix="/")
    assert browser._site is not None
    return browser._site


def ask(body: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(browser.ask_static(json.dumps(body)))
    return result


# --- lexical -------------------------------------------------------------------------------


def test_build_is_deterministic_and_gap_encoded() -> None:
    block = _lexical()
    assert block == _lexical()
    assert block.doc_dtype == "u2" and block.doc_encoding == "gaps"
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


# --- the gate on the small site ------------------------------------------------------------


def test_calibrated_threshold_separates_the_small_sites_probes(site: Site) -> None:
    for question in COVERED:
        assert site.judge(site.search(question))[0], question
    for question in OFF_TOPIC:
        assert not site.judge(site.search(question))[0], question


# --- passages ------------------------------------------------------------------------------


def test_every_passage_block_ends_with_its_citation_marker() -> None:
    units = _units()
    markdown = passages_markdown("How do I rotate an API key?", units[2:4])
    # The framing line, then each excerpt as a quote of the docs, led by its page and section.
    framing, _, quotes = markdown.partition("\n\n")
    assert framing == "Quoted from the sections of the docs closest to your question:"
    blocks = quotes.split("\n\n> **")
    assert blocks[0].startswith("> **Authentication › API keys**: ") and "[1]" in blocks[0]
    assert blocks[1].startswith("Authentication › Rotating keys**: ")
    assert blocks[1].endswith("[2]")


def test_excerpt_keeps_the_relevant_code_block() -> None:
    text = _units()[2].text
    assert "```bash" in excerpt("curl with the X-API-Key header", text)
    assert "```" not in excerpt("dashboard", "Made in the dashboard.\n\n```\nunrelated()\n```")


# --- static mode ---------------------------------------------------------------------------


def test_covered_question_gets_cited_passages(site: Site) -> None:
    result = ask({"question": "How do I rotate an API key?"})
    assert result["kind"] == "passages" and result["retriever"] == "lexical"
    assert result["citations"][0]["id"] == "/auth/#rotating-keys"
    assert [c["n"] for c in result["citations"]] == list(range(1, len(result["citations"]) + 1))
    assert result["confidence"] >= 50
    assert result["ranked"][0] == "/auth/#rotating-keys"
    assert result["bundle_hash"] == "ab" * 32


def test_off_topic_question_is_refused_with_distinct_closest_pages(
    site: Site,
) -> None:
    result = ask({"question": "How should I prune an apple tree in late winter?"})
    assert result["kind"] == "refusal" and result["confidence"] < 50
    urls = [p["url"] for p in result["closest"]]
    assert len(urls) == len(set(urls)) <= 5
    assert "does not seem to cover this" in result["markdown"]
    assert result["citations"] == []


def test_static_mode_frames_refusals_and_passages_in_the_page_language(site: Site) -> None:
    ja = FRAMINGS["ja"]
    refused = ask({"question": "How should I prune an apple tree in late winter?", "lang": "ja"})
    assert refused["kind"] == "refusal"
    assert refused["markdown"].startswith("Acme " + ja.refusal.partition("{site}")[2].strip())
    assert "does not seem to cover" not in refused["markdown"]
    quoted = ask({"question": "How do I rotate an API key?", "lang": "ja"})
    assert quoted["blocks"][0] == {"t": "p", "c": [ja.passages]}


def test_greeting_and_credential_end_the_turn_before_retrieval(site: Site) -> None:
    hello = ask({"question": "hello"})
    assert hello["kind"] == "social" and "Acme" in hello["markdown"]
    assert hello["confidence"] is None and hello["ranked"] == []
    secret = "ghp_R7x2Lq9Vz4Mw8Kc1Tb6Hn3Pd5Fy0Gs2Ja8Ue"
    leaked = ask({"question": "why does this fail?", "quote": f"token {secret}"})
    assert leaked["kind"] == "credential" and leaked["credential_kind"]
    assert secret not in json.dumps(leaked) and leaked["ranked"] == []


def test_the_readers_page_leads_only_the_models_input(site: Site) -> None:
    plain = ask({"question": "dashboard keys"})
    on_page = ask({"question": "dashboard keys", "page": "/deploy/"})
    assert on_page == {**plain, "turn_id": on_page["turn_id"]}  # passages: own merit only
    assert not any(c["url"].startswith("/deploy/") for c in on_page["citations"])
    retrieval = site.retrieve(AskRequest(question="dashboard keys", page="/deploy/?x=1#top"))
    first = [site.bundle.units[u].url for u in retrieval.model_order()[:2]]
    assert all(url.startswith("/deploy/") for url in first)


def test_a_bad_request_gets_the_servers_error_object(site: Site) -> None:
    assert ask({"question": "   "}) == {"error": {"field": "question", "message": "is empty"}}
    assert ask({"question": "hi", "history": "no"})["error"]["field"] == "history"


def test_check_finds_a_credential_and_its_span() -> None:
    question = "my token is ghp_R7x2Lq9Vz4Mw8Kc1Tb6Hn3Pd5Fy0Gs2Ja8Ue thanks"
    found = browser.check(question)["credential"]
    assert found is not None
    assert question[found["start"] : found["end"]].startswith("ghp_")
    assert browser.check("what is a GitHub token?") == {"credential": None, "dropped": []}


def test_an_excerpt_quotes_the_sentence_that_matched_whole() -> None:
    text = (
        "Builds are fast. The embeddings are cached per project, e.g. under the user's "
        "cache folder, and reused by every build. Unrelated filler follows here.\n\n"
        "Some other paragraph mentions the cache once."
    )
    # Not split at "e.g.", and nothing stitched from another paragraph.
    assert excerpt("where are embeddings cached per project", text) == (
        "The embeddings are cached per project, e.g. under the user's cache folder, and "
        "reused by every build."
    )


def test_an_excerpt_never_cuts_a_code_span_or_loses_the_match() -> None:
    text = "Set `exclude: [a. B]` to skip pages. Then rebuild. Nothing else."
    assert excerpt("exclude skip pages", text).startswith("Set `exclude: [a. B]` to skip pages.")
    long = "Intro words " * 50 + "and finally the rotation interval is thirty days."
    quoted = excerpt("rotation interval", long)
    assert "rotation interval is thirty days." in quoted and quoted.startswith("…")
    assert len(quoted) <= 420


def test_an_excerpt_adds_the_neighbouring_sentence_that_shares_words() -> None:
    text = "Keys are made in the dashboard. A key expires after a year. Billing is monthly."
    assert excerpt("when does a key expire", text) == (
        "Keys are made in the dashboard. A key expires after a year."
    )


def test_passages_treat_list_items_as_their_own_sentences() -> None:
    from docpilot_runtime.reply.passages import excerpt

    text = "Hosts all work.\n- Keep the folder in place.\n- Serve wasm as application/wasm."
    quoted = excerpt("keep folder", text)
    assert "- Keep" not in quoted and "Keep the folder in place." in quoted


# --- the composed channel --------------------------------------------------------------------


def _after(question: str, earlier: str) -> dict[str, Any]:
    return ask({"question": question, "history": [{"question": earlier, "kind": "passages"}]})


def test_follow_up_in_another_language_is_rescued_through_a_cognate(site: Site) -> None:
    """The function-word lists (a JSON data file) and the cognate match run in the browser
    too: "expirent" meets "expire" in the earlier answer's section."""
    question = "et les clés expirent quand ?"
    assert ask({"question": question})["kind"] == "refusal"
    after = _after(question, "How do I rotate an API key?")
    assert after["kind"] == "passages" and after["rescued"] is True
    assert after["citations"][0]["id"] == "/auth/#rotating-keys"


def test_unrelated_question_in_another_language_stays_refused_after_a_covered_turn(
    site: Site,
) -> None:
    question = "wie backe ich ein Brot mit Sauerteig?"
    assert ask({"question": question})["kind"] == "refusal"
    after = _after(question, "How do I rotate an API key?")
    assert after["kind"] == "refusal" and after["rescued"] is False


def test_the_sharded_index_answers_like_the_whole_one_fetching_only_what_it_names(
    site: Site,
) -> None:
    """Under Pyodide too: each file a turn names is fetched once, results are equal."""
    files = encode_shards(site.bundle, site.searcher.release).files
    browser.load_manifest(files[MANIFEST_NAME])
    fetched: set[str] = set()
    bodies = [
        {"question": q} for q in [*COVERED, *OFF_TOPIC, "hello!", "my key is sk-" + "a" * 40]
    ]
    covered = ask({"question": "How do I rotate an API key?"})
    earlier = {"question": "How do I rotate an API key?", "kind": "passages"}
    bodies.append({"question": "et les clés expirent quand ?", "history": [
        {**earlier, "markdown": covered["markdown"]}]})
    for body in bodies:
        for _ in range(4):
            got = json.loads(browser.ask_sharded(json.dumps(body)))
            if "need" not in got:
                break
            for name in got["need"]:
                assert name not in fetched
                fetched.add(name)
                browser.add_file(name, files[name])
        got.pop("turn_id")
        expected = ask(body)
        expected.pop("turn_id")
        assert got == expected, body
    assert got["rescued"] is True  # the follow-up, through a cognate in its word's shard
    assert fetched < set(files) - {MANIFEST_NAME}


@pytest.mark.parametrize("with_language", [True, False])
def test_a_sharded_turn_frames_in_the_readers_language_with_or_without_the_manifests_field(
    site: Site, with_language: bool
) -> None:
    """The manifest names the docs' language, so the first turn need not fetch the first
    sections to read it; a manifest without the field (an older build) has them fetched
    and still frames the French follow-up in French, as the whole index does."""
    files = dict(encode_shards(site.bundle, site.searcher.release).files)
    manifest = json.loads(files[MANIFEST_NAME])
    assert manifest["site"]["docs_language"] == "en"
    if not with_language:
        del manifest["site"]["docs_language"]
    browser.load_manifest(json.dumps(manifest).encode())
    covered = ask({"question": "How do I rotate an API key?"})
    body = {"question": "et les clés expirent quand ?", "history": [
        {"question": "How do I rotate an API key?", "kind": "passages",
         "markdown": covered["markdown"]}]}
    for _ in range(4):
        got = json.loads(browser.ask_sharded(json.dumps(body)))
        if "need" not in got:
            break
        for name in got["need"]:
            browser.add_file(name, files[name])
    assert got["markdown"].startswith(FRAMINGS["fr"].passages), got["markdown"][:80]
