"""What a reader sees when answering goes wrong, one state at a time, each honest about what
happened and what to do: a rate cap (its wait, then Retry), a slow runtime (a progress line
at once, "still working", a timeout with Retry), a runtime that stops mid-session (one
state, not the static fallback's notice and an error together), a Pyodide download that
stalls (the prompt error a blocked one gets), and no network at all."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from browsing import ANSWER_TIMEOUT_MS, Reader
from docpilot_runtime.serve.app import create_app
from docpilot_runtime.settings.load import Settings
from playwright.sync_api import Page, Route, expect
from servers.runtime import NO_CAPS, serve_app

COVERED = "How do I exclude a page from the assistant?"
STRINGS = json.loads((Path(__file__).parents[2] / "widget/i18n/en.json").read_text("utf-8"))


def test_a_rate_cap_says_how_long_to_wait_and_enables_retry_after_it(reader: Reader) -> None:
    page = reader.page
    said = "too many questions (per-client cap); try again in 2 s"

    def capped(route: Route) -> None:
        body = {"error": {"status": 429, "field": "rate", "message": said, "retry_after": 2}}
        route.fulfill(status=429, json=body, headers={"Retry-After": "2"})

    page.route("**/api/ask", capped)
    page.goto("/")
    reader.open_panel()
    reader.ask(COVERED)
    error = page.locator(".dp-turn .dp-error")
    expect(error.locator("p")).to_have_text(
        STRINGS["rate_limited"].replace("{seconds}", "2"), timeout=ANSWER_TIMEOUT_MS
    )
    expect(error.locator("small")).to_have_text(said)  # the runtime's own words
    retry = error.get_by_role("button", name="Retry")
    expect(retry).to_be_disabled()
    shown = time.monotonic()
    expect(retry).to_have_text("Retry (2)")
    expect(retry).to_be_enabled(timeout=5_000)
    assert time.monotonic() - shown > 1.0, "Retry came back before the wait was over"
    expect(retry).to_have_text("Retry")
    expect(page.locator(".dp-input")).to_have_value(COVERED)
    expect(page.locator(".dp-turn .dp-steps")).to_have_count(0)


def test_a_slow_runtime_shows_progress_at_once_then_still_working_then_a_timeout(
    reader: Reader,
) -> None:
    page = reader.page
    held: list[Route] = []
    # The runtime takes the question and says nothing.
    page.route("**/api/ask", lambda route: held.append(route))
    page.clock.install()  # the widget's timers, moved on by the test rather than waited for
    page.goto("/")
    reader.open_panel()
    reader.ask(COVERED)
    steps = page.locator(".dp-turn .dp-steps li")
    expect(steps.last).to_have_text(STRINGS["waiting"], timeout=ANSWER_TIMEOUT_MS)
    assert held, "the question never reached the runtime"
    page.clock.fast_forward(7_000)
    expect(steps.last).to_have_text(STRINGS["still_working"])
    expect(page.locator(".dp-turn .dp-error")).to_have_count(0)
    page.clock.fast_forward(60_000)
    error = page.locator(".dp-turn .dp-error")
    expect(error.locator("p")).to_have_text(STRINGS["timed_out"])
    expect(error.get_by_role("button", name="Retry")).to_be_enabled()
    expect(page.locator(".dp-input")).to_have_value(COVERED)


# A worker that starts, then never answers the credential check (a hung Python call).
SILENT_CHECK_WORKER = """
self.onmessage = ({ data }) => {
  if (data.type === "boot") self.postMessage({ id: data.id, ok: true, result: {} });
};
"""


def test_a_check_that_never_answers_times_out_instead_of_spinning(reader: Reader) -> None:
    page = reader.page
    page.route(
        "**/docpilot/worker.js",
        lambda route: route.fulfill(body=SILENT_CHECK_WORKER, content_type="text/javascript"),
    )
    page.clock.install()
    page.goto("/")
    reader.open_panel()
    reader.ask(COVERED)
    expect(page.locator(".dp-send")).to_have_attribute("aria-label", STRINGS["stop"])
    page.clock.fast_forward(61_000)
    error = page.locator(".dp-turn .dp-error")
    expect(error.locator("p")).to_have_text(STRINGS["timed_out"])
    assert not reader.asks(), "the question left the page before its check"
    expect(page.locator(".dp-input")).to_have_value(COVERED)


def test_a_runtime_that_stops_mid_session_is_one_clear_state(
    page: Page, example_site: Path
) -> None:
    with serve_app(create_app(example_site, Settings(caps=NO_CAPS))) as running:
        page.goto(running.base_url + "/")
        page.locator(".dp-launcher").click()
        page.locator(".dp-input").fill(COVERED)
        page.locator(".dp-input").press("Enter")
        page.locator(".dp-body[data-kind]").first.wait_for(timeout=ANSWER_TIMEOUT_MS)
    # `docpilot serve` is gone, and the site it served with it.
    page.locator(".dp-input").fill("Where does the widget store conversations?")
    page.locator(".dp-input").press("Enter")
    error = page.locator(".dp-turn").nth(1).locator(".dp-error")
    expect(error.locator("p")).to_have_text(STRINGS["runtime_down"], timeout=ANSWER_TIMEOUT_MS)
    panel = page.locator("#dp-panel")
    expect(panel.locator(".dp-notice")).to_have_count(0)  # no "the docs' own passages"
    expect(panel).not_to_contain_text(STRINGS["error"])
    expect(error.get_by_role("button", name="Retry")).to_be_enabled()
    expect(page.locator(".dp-input")).to_have_value("Where does the widget store conversations?")


@pytest.mark.cold_pyodide
def test_a_stalled_pyodide_download_is_reported_like_a_blocked_one(reader: Reader) -> None:
    page = reader.page
    stalled: list[float] = []

    def stall(route: Route) -> None:
        stalled.append(time.monotonic())  # and never answered, as a hung proxy would

    page.context.route("**/*.wasm", stall)
    page.goto("/")
    reader.open_panel()
    reader.ask(COVERED)
    error = page.locator(".dp-turn .dp-error")
    expect(error.locator("p")).to_have_text(STRINGS["check_failed"], timeout=30_000)
    assert stalled, "the .wasm was never requested"
    waited = time.monotonic() - stalled[0]
    assert waited < 25, f"reported {waited:.1f} s after the download stalled"
    assert reader.api_requests() == []
    expect(page.locator(".dp-input")).to_have_value(COVERED)


def test_offline_the_question_is_kept_and_retry_sends_it_once_back_online(
    reader: Reader,
) -> None:
    page = reader.page
    page.goto("/")
    reader.open_panel()
    page.context.set_offline(True)
    reader.ask(COVERED)
    error = page.locator(".dp-turn .dp-error")
    expect(error.locator("p")).to_have_text(STRINGS["offline"], timeout=ANSWER_TIMEOUT_MS)
    expect(page.locator(".dp-input")).to_have_value(COVERED)
    assert reader.asks() == []
    page.context.set_offline(False)
    error.get_by_role("button", name="Retry").click()
    assert reader.wait_answer().get_attribute("data-kind") == "passages"
    assert [a["question"] for a in reader.asks()] == [COVERED]
