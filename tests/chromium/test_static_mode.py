"""Static mode (`endpoint: browser`): example-site on a plain static file server, no
runtime at all; the widget answers in the browser from the site's own files."""

from __future__ import annotations

from browsing import Reader, with_widget_config
from playwright.sync_api import expect

COVERED = "How do I exclude a page from the assistant?"


def test_static_site_answers_in_the_browser_with_no_runtime(
    reader: Reader, static_server: str
) -> None:
    page = reader.page
    page.goto(f"{static_server}/reference/cli/")
    reader.open_panel()
    reader.ask(COVERED)
    body = reader.wait_answer()

    assert body.get_attribute("data-kind") == "passages"
    links = page.locator(".dp-cites li a")
    assert links.count() >= 2
    href = links.first.get_attribute("href") or ""
    assert href.startswith(f"{static_server}/") and "#" in href
    expect(page.locator(".dp-fb")).to_have_count(0)  # no runtime to send feedback to

    reader.ask("hello")
    assert reader.wait_answer(1).get_attribute("data-kind") == "social"
    reader.ask("How do I bake sourdough bread?")
    assert reader.wait_answer(2).get_attribute("data-kind") == "refusal"

    # Everything came from the static site itself: no API, no other host.
    assert reader.api_requests() == []
    loaded = {r.url for r in reader.requests if "/docpilot/" in r.url}
    # The sharded index: its manifest, then only some of its files; never the whole file.
    assert f"{static_server}/docpilot/static/manifest.json" in loaded
    assert f"{static_server}/docpilot/static.json" not in loaded
    shards = [u for u in loaded if "/docpilot/static/" in u and not u.endswith("manifest.json")]
    assert len(shards) > 0, loaded
    # A plain static server compresses nothing: Pyodide's wasm came as the build's .gz.
    assert f"{static_server}/docpilot/pyodide/pyodide.asm.wasm.gz" in loaded
    assert f"{static_server}/docpilot/pyodide/pyodide.asm.wasm" not in loaded
    # The history travelled to the in-browser runtime like it would to a server.
    history = page.evaluate("JSON.parse(sessionStorage.getItem('docpilot:chat')).turns.length")
    assert history == 3


def test_static_mode_takes_the_owner_s_question_limit(reader: Reader, static_server: str) -> None:
    """The owner's `max_question_chars` (3,000 here) holds in the browser's runtime too,
    not the server's default of 2,000."""
    page = reader.page
    with_widget_config(page, "/", lambda config: config.update(max_question_chars=3000))
    page.goto(f"{static_server}/")
    reader.open_panel()
    long = COVERED + " " + "Please explain it in detail. " * 85  # about 2,500 characters
    assert 2000 < len(long.strip()) < 3000
    reader.ask(long)
    body = reader.wait_answer()
    assert body.get_attribute("data-kind") == "passages"
    expect(page.locator(".dp-turn .dp-error")).to_have_count(0)
