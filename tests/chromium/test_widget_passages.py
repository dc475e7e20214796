"""Passages (no model, and all of static mode) read as quoted excerpts of the docs, each
naming its page and section."""

from __future__ import annotations

from browsing import Reader
from docpilot_runtime.shared.framing import ENGLISH
from playwright.sync_api import expect

COVERED = "How do I exclude a page from the assistant?"
OFF_TOPIC = "How do I bake sourdough bread?"


def test_passages_are_quoted_excerpts_naming_page_and_section(reader: Reader) -> None:
    page = reader.page
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto("/")
    reader.open_panel()
    reader.ask(COVERED)
    body = reader.wait_answer()
    assert body.get_attribute("data-kind") == "passages"

    quotes = body.locator(":scope > blockquote")
    assert quotes.count() >= 2
    # One line saying these are quotes, then nothing but quotes: no sentence of the
    # answer is the assistant's own.
    expect(body.locator(":scope > :first-child")).to_have_text(ENGLISH.passages)
    assert body.evaluate(
        "(b) => [...b.children].slice(1).every((c) => c.tagName === 'BLOCKQUOTE')"
    )
    labels = quotes.locator("p:first-child > strong").all_text_contents()
    assert len(labels) == quotes.count()
    assert any(" › " in label for label in labels), labels
    for quote in quotes.all():
        expect(quote.locator("a.dp-cite")).to_have_count(1)
    reader.screenshot("passages")

    reader.ask(OFF_TOPIC)
    refusal = reader.wait_answer(1)
    assert refusal.get_attribute("data-kind") == "refusal"
    refusal.scroll_into_view_if_needed()
    reader.screenshot("refusal")
