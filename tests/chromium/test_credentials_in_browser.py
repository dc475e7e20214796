"""A pasted credential never leaves the browser: the widget checks every question (its
quote and the history it sends) in its Pyodide worker before any request, drops a history
item holding a secret, and sends nothing when the check cannot run."""

from __future__ import annotations

import pytest
from browsing import Reader
from playwright.sync_api import Route, expect

COVERED = "How do I exclude a page from the assistant?"
FAKE_AWS_KEY = "AKIAZ7Q3MXV4LR2TN6WB"  # the shape of an AWS access key id, not a real one
FAKE_GITHUB_TOKEN = "ghp_" + "x7Kq2MvR9tLpW4zN8cYb3HdF6jS1aE5uG0oT"  # shape only


@pytest.mark.cold_pyodide
def test_pasted_credential_never_leaves_the_browser(reader: Reader, base_url: str) -> None:
    page = reader.page
    page.goto("/")
    reader.open_panel()
    reader.ask(f"Why does boto3 reject my key {FAKE_AWS_KEY}?")
    body = reader.wait_answer()

    assert body.get_attribute("data-kind") == "credential"
    expect(body).to_contain_text("secret")
    expect(page.locator(".dp-q")).not_to_contain_text(FAKE_AWS_KEY)  # masked on screen too
    # No request reached the API, and none carried the key anywhere.
    assert reader.api_requests() == []
    for request in reader.requests:
        assert FAKE_AWS_KEY not in request.url
        assert FAKE_AWS_KEY not in (request.post_data or "")
    # The check ran in Pyodide, loaded from the site itself (and the recorder saw the
    # worker's own requests, so it would have seen any other).
    pyodide = [r.url for r in reader.requests if "/docpilot/pyodide/" in r.url]
    assert any(url.endswith(".wasm") for url in pyodide)
    assert all(url.startswith(base_url) for url in pyodide)
    assert page.evaluate("sessionStorage.length") == 0

    # The next clean question goes out, without the secret in its history.
    reader.ask(COVERED)
    reader.wait_answer(1)
    (sent,) = reader.asks()
    assert sent["history"] == []
    assert FAKE_AWS_KEY not in page.evaluate("JSON.stringify(sessionStorage)")


def test_a_credential_in_the_quote_is_caught_too(reader: Reader) -> None:
    page = reader.page
    page.goto("/")
    reader.open_panel()
    reader.ask(COVERED)
    body = reader.wait_answer()
    # The reader quotes part of an answer that, say, they edited to hold a token.
    body.locator("p").first.evaluate(
        "(p, token) => { p.textContent = 'Use ' + token + ' here'; p.scrollIntoView();"
        " const r = document.createRange(); r.selectNodeContents(p);"
        " getSelection().removeAllRanges(); getSelection().addRange(r); }",
        FAKE_GITHUB_TOKEN,
    )
    page.get_by_role("button", name="Ask about this", exact=True).click()
    reader.ask("Is this right?")
    second = reader.wait_answer(1)

    assert second.get_attribute("data-kind") == "credential"
    assert len(reader.asks()) == 1  # only the first, clean question was sent


def test_nothing_is_sent_when_the_check_cannot_start(reader: Reader) -> None:
    page = reader.page

    def fail(route: Route) -> None:
        route.fulfill(status=404, body="missing")

    page.route("**/docpilot/pyodide/**", fail)
    page.goto("/")
    reader.open_panel()
    reader.ask(COVERED)
    error = page.locator(".dp-turn .dp-error")
    expect(error).to_contain_text("nothing was sent", timeout=30_000)
    assert reader.api_requests() == []
    assert page.evaluate("sessionStorage.length") == 0


def test_a_credential_in_a_history_item_is_dropped_before_anything_is_sent(
    reader: Reader,
) -> None:
    page = reader.page
    page.goto("/")
    reader.open_panel()
    reader.ask(COVERED)
    reader.wait_answer()
    # The kept conversation now holds a token in an earlier turn (the reader pasted it into
    # the stored chat, or an earlier answer quoted one): it must not travel as history.
    page.evaluate(
        "(token) => { const chat = JSON.parse(sessionStorage.getItem('docpilot:chat'));"
        " chat.turns[0].result.markdown += ' Use ' + token;"
        " sessionStorage.setItem('docpilot:chat', JSON.stringify(chat)); }",
        FAKE_GITHUB_TOKEN,
    )
    page.reload()
    if not page.locator("#dp-panel").is_visible():
        reader.open_panel()
    reader.ask("And how do I exclude a whole folder?")
    reader.wait_answer(1)

    first, second = reader.asks()  # the turn went on, without the item
    assert len(first["question"]) > 0 and second["history"] == []
    for request in reader.requests:
        assert FAKE_GITHUB_TOKEN not in request.url
        assert FAKE_GITHUB_TOKEN not in (request.post_data or "")
    assert FAKE_GITHUB_TOKEN not in page.evaluate("JSON.stringify(sessionStorage)")
