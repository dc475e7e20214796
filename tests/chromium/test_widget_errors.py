"""Error states a reader can see and act on: legible in both palettes, with a retry and
the question put back, and a Pyodide file that fails to load reported at once."""

from __future__ import annotations

import time

import pytest
from browsing import CONTRAST, Reader
from playwright.sync_api import Page, Route, expect

COVERED = "How do I exclude a page from the assistant?"


def unreachable(page: Page) -> None:
    page.route("**/api/ask", lambda route: route.abort("connectionrefused"))


def test_an_error_is_legible_in_light_and_dark_and_offers_a_retry(reader: Reader) -> None:
    page = reader.page
    unreachable(page)
    page.goto("/")
    reader.open_panel()
    reader.ask(COVERED)
    error = page.locator(".dp-turn .dp-error")
    expect(error).to_contain_text("could not be reached", timeout=60_000)
    # The question is back in the box, ready to send again.
    expect(page.locator(".dp-input")).to_have_value(COVERED)
    text = error.locator("p")
    light = text.evaluate(CONTRAST)
    assert light >= 4.5, f"error text contrast {light:.2f}:1 in the light palette"
    reader.screenshot("error-light")
    page.locator("label[title='Switch to dark mode']").first.click()
    expect(page.locator("body")).to_have_attribute("data-md-color-scheme", "slate")
    dark = text.evaluate(CONTRAST)
    assert dark >= 4.5, f"error text contrast {dark:.2f}:1 in the dark palette"
    reader.screenshot("error-dark")
    # No progress line keeps blinking after the failure.
    expect(page.locator(".dp-turn .dp-steps")).to_have_count(0)
    page.locator("label[title='Switch to light mode']").first.click()

    # Retry sends the same question again; this time the runtime answers.
    page.unroute("**/api/ask")
    error.get_by_role("button", name="Retry").click()
    body = reader.wait_answer()
    assert body.get_attribute("data-kind") == "passages"
    expect(page.locator(".dp-turn")).to_have_count(1)
    expect(page.locator(".dp-input")).to_have_value("")
    assert [a["question"] for a in reader.asks()] == [COVERED, COVERED]


@pytest.mark.cold_pyodide
def test_a_blocked_pyodide_file_is_reported_at_once_and_nothing_is_sent(
    reader: Reader,
) -> None:
    page = reader.page
    blocked: list[float] = []

    def block(route: Route) -> None:
        blocked.append(time.monotonic())
        route.abort("blockedbyclient")

    # A proxy or a policy refusing the WebAssembly file, as some do.
    page.context.route("**/*.wasm", block)
    page.goto("/")
    reader.open_panel()
    reader.ask(COVERED)
    error = page.locator(".dp-turn .dp-error")
    # The widget's own deadline is 90 s; a failed fetch must be reported long before.
    expect(error).to_contain_text("nothing was sent", timeout=30_000)
    reported = time.monotonic()
    assert blocked, "the .wasm was never requested"
    assert reported - blocked[0] < 3, f"reported {reported - blocked[0]:.1f} s after the failure"
    assert reader.api_requests() == []
    expect(page.locator(".dp-input")).to_have_value(COVERED)
    expect(error.get_by_role("button", name="Retry")).to_be_visible()
    expect(page.locator(".dp-turn .dp-steps")).to_have_count(0)
    assert "… …" not in (page.locator("#dp-panel").text_content() or "")
    assert "secret check" not in (page.locator("#dp-panel").text_content() or "")


def test_a_stylesheet_that_fails_once_is_fetched_again_and_the_widget_appears(
    reader: Reader,
) -> None:
    """A dropped connection on docpilot.css (a flaky network, a busy host) must not hide the
    assistant for the whole page: the widget stays hidden only until its stylesheet is in."""
    page = reader.page
    asked: list[str] = []

    def first_fails(route: Route) -> None:
        asked.append(route.request.url)
        route.abort("connectionreset") if len(asked) == 1 else route.continue_()

    page.route("**/docpilot/docpilot.css*", first_fails)
    page.goto("/")
    expect(page.locator(".dp-launcher")).to_be_visible(timeout=30_000)
    assert len(asked) == 2, asked
    reader.open_panel()
    expect(page.locator(".dp-input")).to_be_visible()


def test_a_stylesheet_that_never_loads_is_named_in_the_console(reader: Reader) -> None:
    """When the stylesheet cannot be had at all (a policy, a blocker), the widget stays out
    of the page rather than drawing unstyled, and tells the owner why in the console."""
    page = reader.page
    page.route("**/docpilot/docpilot.css*", lambda route: route.abort("blockedbyclient"))
    with page.expect_console_message(
        lambda msg: msg.type == "warning" and "DocPilot" in msg.text, timeout=30_000
    ) as said:
        page.goto("/")
    assert "docpilot.css" in said.value.text, said.value.text
    expect(page.locator("#docpilot.dp")).to_be_hidden()
