"""Passages (no model, and all of static mode) read as quoted excerpts of the docs, each
naming its page and section."""

from __future__ import annotations

from browsing import Reader, result, serve_answer
from docpilot_runtime.reply.passages import passages_blocks
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
    assert body.evaluate("(b) => [...b.children].slice(1).every((c) => c.tagName === 'BLOCKQUOTE')")
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


class _Unit:
    """A section as `passages_blocks` reads it (the bundle's unit fields it uses)."""

    title = "exclude"
    breadcrumb = ("Plugin configuration",)
    text = "Set `exclude` in the plugin's options, for example `drafts/*`, to leave pages out."


def test_inline_code_in_a_quoted_passage_is_drawn_as_code(reader: Reader) -> None:
    page = reader.page
    blocks = passages_blocks("How do I exclude pages?", [_Unit()])
    citation = {
        "n": 1,
        "id": "/reference/plugin-configuration/#exclude",
        "url": "/reference/plugin-configuration/#exclude",
        "title": "exclude",
        "page_title": "Plugin configuration",
        "excerpt": "Set `exclude` in the plugin's options.",
    }
    serve_answer(page, result(kind="passages", markdown="-", blocks=blocks, citations=[citation]))
    page.goto("/")
    reader.open_panel()
    reader.ask("How do I exclude pages?")
    body = reader.wait_answer()
    code = body.locator("blockquote p code")
    expect(code).to_have_text(["exclude", "drafts/*"])
    style = code.first.evaluate(
        "(c) => { const s = getComputedStyle(c); return [s.fontFamily, s.backgroundColor]; }"
    )
    assert "mono" in style[0].lower() and style[1] != "rgba(0, 0, 0, 0)", style
    # The source's preview shows it as code too.
    expect(page.locator(".dp-cites .dp-preview code")).to_have_text("exclude")


def test_a_docs_table_is_quoted_as_a_table(reader: Reader) -> None:
    page = reader.page
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto("/")
    reader.open_panel()
    reader.ask("What is the default of max_body_bytes?")
    body = reader.wait_answer()
    assert body.get_attribute("data-kind") == "passages"
    table = body.locator("blockquote .md-typeset__scrollwrap table").first
    expect(table.locator("thead th")).to_have_text(["Key", "Type", "Default", "Meaning"])
    expect(table.locator("tbody tr")).to_have_count(1)
    expect(table.locator("tbody td").first).to_have_text("max_body_bytes")
    expect(table.locator("tbody td").nth(2)).to_have_text("65536")
    table.scroll_into_view_if_needed()
    reader.screenshot("passages-table")
