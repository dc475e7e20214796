"""The runtime's own words follow the page's language: the ask request's `lang` picks the
refusal, the framing of passages and the progress lines from one table per language,
over real HTTP to the example site's runtime."""

from __future__ import annotations

import json
import re
from dataclasses import asdict
from typing import Any

import httpx
import pytest
from docpilot_runtime.shared.framing import ENGLISH, FIELDS, FRAMINGS, framing_for
from docpilot_runtime.shared.types import Limits, RequestError, parse_ask_request
from servers.asgi import example_client as example_client  # module fixture

LANGUAGES = ("en", "de", "fr", "es", "pt", "it", "ja", "zh", "ko", "hi")
COVERED = "How do I exclude a page from the assistant?"
OFF_TOPIC = "What is the best recipe for sourdough bread?"


@pytest.fixture(scope="module")
def client(example_client: httpx.Client) -> httpx.Client:
    return example_client


def events(client: httpx.Client, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    response = client.post("/api/ask", json=body, headers={"Accept": "text/event-stream"})
    assert response.status_code == 200, response.text
    found = []
    for block in response.text.strip().split("\n\n"):
        name = re.search(r"^event: (.*)$", block, re.M)
        data = re.search(r"^data: (.*)$", block, re.M)
        assert name and data, block
        found.append((name.group(1), json.loads(data.group(1))))
    return found


def test_every_language_has_every_phrase_with_its_placeholders() -> None:
    assert set(FRAMINGS) == set(LANGUAGES)
    english = asdict(ENGLISH)
    for lang, table in FRAMINGS.items():
        for name in FIELDS:
            phrase = getattr(table, name)
            assert phrase.strip(), (lang, name)
            assert re.findall(r"\{\w+\}", phrase) == re.findall(r"\{\w+\}", english[name]), (
                lang,
                name,
            )
        if lang != "en":
            assert table.refusal != ENGLISH.refusal and table.passages != ENGLISH.passages, lang


def test_a_language_tag_picks_its_table_and_unknown_ones_get_english() -> None:
    assert framing_for("pt-BR") is FRAMINGS["pt"]
    assert framing_for("zh_Hans") is FRAMINGS["zh"]
    assert framing_for("JA") is FRAMINGS["ja"]
    assert framing_for("nl") is ENGLISH and framing_for(None) is ENGLISH


@pytest.mark.parametrize(
    ("value", "accepted"),
    [("ja", True), ("pt-BR", True), ("", True), ("en-", False), ("x" * 36, False), ("<b>", False)],
)
def test_lang_is_a_bounded_language_tag(value: str, accepted: bool) -> None:
    body = {"question": "q", "lang": value}
    if accepted:
        assert parse_ask_request(body, Limits()).lang == (value or None)
        return
    with pytest.raises(RequestError) as raised:
        parse_ask_request(body, Limits())
    assert raised.value.field == "lang"


def test_a_bad_lang_is_a_400_naming_the_field(client: httpx.Client) -> None:
    response = client.post("/api/ask", json={"question": COVERED, "lang": "not a tag"})
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "lang"


def test_a_japanese_page_gets_japanese_refusal_passages_and_progress(
    client: httpx.Client,
) -> None:
    ja = FRAMINGS["ja"]
    refused = events(client, {"question": OFF_TOPIC, "lang": "ja"})
    answer = refused[-1][1]
    assert answer["kind"] == "refusal"
    assert ja.refusal.partition("{site}")[2] in answer["markdown"]
    assert ja.closest in answer["markdown"]
    assert "does not seem to cover" not in answer["markdown"]
    assert ("progress", {"stage": "retrieval", "message": ja.not_covered}) in refused

    quoted = events(client, {"question": COVERED, "lang": "ja"})
    answer = quoted[-1][1]
    assert answer["kind"] == "passages"
    assert answer["blocks"][0] == {"t": "p", "c": [ja.passages]}
    assert all(block["t"] == "blockquote" for block in answer["blocks"][1:])
    progress = [data["message"] for name, data in quoted if name == "progress"]
    assert progress[0] == ja.found_results(len(answer["citations"]))


def test_without_lang_the_runtime_speaks_english(client: httpx.Client) -> None:
    answer = events(client, {"question": COVERED})[-1][1]
    assert answer["blocks"][0] == {"t": "p", "c": [ENGLISH.passages]}


SECRET = "ghp_" + "Q7rT2mXk9LpV4nB8cW1zY6hJ3dF5sA0gE" + "u2"


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_credential_warning_is_in_the_page_s_language(
    client: httpx.Client, lang: str
) -> None:
    """The server's reply and the browser's check (which the widget shows first) agree."""
    from docpilot_runtime.browser import worker as browser

    question = f"why does {SECRET} fail?"
    result = client.post("/api/ask", json={"question": question, "lang": lang}).json()
    assert result["kind"] == "credential"
    table = FRAMINGS[lang]
    assert result["markdown"].startswith(table.credential.split("{label}")[0])
    assert table.rotate_key.split("**")[0] in result["markdown"]
    assert SECRET not in json.dumps(result)
    local = browser.check(question, lang=lang)["credential"]
    assert local["markdown"] == result["markdown"]
