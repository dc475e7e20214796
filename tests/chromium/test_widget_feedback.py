"""Feedback: the thumbs-down form comes into view when it opens, and the reader is told
whether the rating reached the runtime (a failed send says so and can be sent again)."""

from __future__ import annotations

from typing import Any

from browsing import Reader, result, serve_answer
from playwright.sync_api import Route, expect

COVERED = "How do I exclude a page from the assistant?"
LONG = "\n\n".join(f"Paragraph {i} of a long answer about excluding pages [1]." for i in range(40))
CITATION = {"n": 1, "id": "/", "url": "/", "title": "Home", "page_title": "Home", "excerpt": ""}


def test_the_thumbs_down_form_scrolls_into_view(reader: Reader) -> None:
    page = reader.page
    page.set_viewport_size({"width": 1280, "height": 800})
    serve_answer(page, result(markdown=LONG, citations=[CITATION]))
    page.goto("/")
    reader.open_panel()
    reader.ask(COVERED)
    reader.wait_answer()
    log = page.locator(".dp-log")
    log.evaluate("(l) => { l.scrollTop = 0; }")  # the reader went back up to read
    page.get_by_role("button", name="Not helpful").click()
    expect(page.get_by_role("button", name="Incorrect")).to_be_focused()
    inside = page.evaluate(
        """() => {
          const log = document.querySelector('.dp-log').getBoundingClientRect();
          const form = document.querySelector('.dp-fb-form').getBoundingClientRect();
          return form.top >= log.top && form.bottom <= log.bottom;
        }"""
    )
    assert inside, "the feedback form is outside the visible part of the panel"


def test_a_failed_send_is_told_apart_from_a_thank_you(reader: Reader) -> None:
    page = reader.page
    failing = {"on": True}

    def feedback(route: Route) -> None:
        if failing["on"]:
            route.fulfill(status=503, body='{"error": {"message": "down"}}')
        else:
            route.fulfill(status=204)

    page.route("**/api/feedback", feedback)
    page.goto("/")
    reader.open_panel()
    reader.ask(COVERED)
    reader.wait_answer()
    helpful = page.get_by_role("button", name="Helpful", exact=True)
    helpful.click()
    status = page.locator(".dp-fb-done")
    expect(status).to_have_text("Your feedback could not be sent. Try again.")
    expect(status).to_have_class("dp-fb-done dp-fb-failed")
    expect(helpful).to_be_enabled()
    reader.screenshot("feedback-failed")

    failing["on"] = False
    helpful.click()
    expect(status).to_have_text("Thanks for your feedback.")
    expect(status).to_have_class("dp-fb-done")
    expect(helpful).to_be_disabled()


def test_a_note_holding_a_secret_never_leaves_the_browser(reader: Reader) -> None:
    """The note is the reader's text like the question: the browser's credential check
    runs on it first, and a note with a secret is not sent (the rating still is)."""
    page = reader.page
    secret = "ghp_" + "Q7rT2mXk9LpV4nB8cW1zY6hJ3dF5sA0gE" + "u2"
    page.goto("/")
    reader.open_panel()
    reader.ask(COVERED)
    reader.wait_answer()
    page.get_by_role("button", name="Not helpful").click()
    page.get_by_role("textbox", name="What was wrong or missing? (optional)").fill(
        f"it failed with my token {secret}"
    )
    # The note waits for the worker to start (Pyodide boots first): seconds, more on a
    # loaded machine.
    with page.expect_response("**/api/feedback", timeout=60_000) as response:
        page.get_by_role("button", name="Send feedback").click()
    assert response.value.status == 204
    sent = response.value.request.post_data or ""
    assert secret not in sent and "note" not in response.value.request.post_data_json
    expect(page.locator(".dp-fb-done")).to_have_text(
        "Thanks for your feedback. Your note looked like it held a password or key, so it"
        " was not sent."
    )


NOTE = "It missed the front matter way"


def rate_restored_answer(reader: Reader, worker_gone: bool = False) -> dict[str, Any]:
    """Ask, load another page (the conversation is restored, no question has started the
    worker there), give the restored answer a thumbs-down with NOTE; the body sent.
    ``worker_gone``: the worker's script is missing on the second page."""
    page = reader.page
    page.goto("/")
    reader.open_panel()
    reader.ask(COVERED)
    reader.wait_answer()
    if worker_gone:
        page.route("**/docpilot/worker.js", lambda route: route.fulfill(status=404, body=""))
    page.goto("/faq/")
    expect(page.locator(".dp-turn .dp-q")).to_have_text(COVERED)
    page.get_by_role("button", name="Not helpful").click()
    page.get_by_role("textbox", name="What was wrong or missing? (optional)").fill(NOTE)
    # The note waits for the worker to start (Pyodide boots first): seconds, more on a
    # loaded machine.
    with page.expect_response("**/api/feedback", timeout=60_000) as response:
        page.get_by_role("button", name="Send feedback").click()
    assert response.value.status == 204
    sent: dict[str, Any] = response.value.request.post_data_json
    return sent


def test_a_note_on_a_restored_answer_is_checked_and_sent_after_a_page_load(
    reader: Reader,
) -> None:
    """Rating a restored answer starts the worker, checks the note, and sends it."""
    assert rate_restored_answer(reader)["note"] == NOTE
    expect(reader.page.locator(".dp-fb-done")).to_have_text("Thanks for your feedback.")


def test_a_note_that_cannot_be_checked_stays_in_the_browser(reader: Reader) -> None:
    """With the worker unable to start, the note cannot be checked for secrets: the
    rating is sent without it and the reader is told so."""
    assert "note" not in rate_restored_answer(reader, worker_gone=True)
    expect(reader.page.locator(".dp-fb-done")).to_have_text(
        "Thanks for your feedback. Your note could not be checked for passwords or keys, so it"
        " was not sent."
    )
