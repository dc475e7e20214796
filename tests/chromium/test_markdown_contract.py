"""The widget's side of the Markdown contract: each fixture tree (markdown_contract.yaml)
drawn by the widget's renderer is exactly the fixture's HTML, and in the real panel on
example-site a table looks like the site's own tables (Material's table styles, in a box
that scrolls sideways)."""

from __future__ import annotations

import re

from browsing import Reader, result, serve_answer
from markdown_contract import CASES, validate
from playwright.sync_api import Page, expect

DRAW = """(trees) => trees.map((blocks) => {
  const box = document.createElement("div");
  box.append(window.renderTree(blocks, { cite: () => null }));
  return box.innerHTML;
})"""


def test_the_widget_draws_each_fixture_tree_as_its_html(renderer: Page) -> None:
    drawn = renderer.evaluate(DRAW, [case.blocks for case in CASES])
    for case, html in zip(CASES, drawn, strict=True):
        assert html == case.html, case.name


def test_a_table_in_an_answer_looks_like_the_sites_tables(reader: Reader) -> None:
    page = reader.page
    page.set_viewport_size({"width": 1280, "height": 900})
    wide = "| " + " | ".join(f"Column {i}" for i in range(12)) + " |\n"
    wide += "|" + " --- |" * 12 + "\n| " + " | ".join(f"value-{i}" for i in range(12)) + " |\n"
    markdown = "\n\n".join([*(case.markdown for case in CASES), wide])
    validated = validate(markdown)
    citations = [
        {"n": c.n, "id": c.id, "url": c.url, "title": c.title, "page_title": c.title}
        for c in validated.citations
    ]
    answer = result(markdown=validated.markdown, blocks=validated.blocks, citations=citations)
    serve_answer(page, answer)
    page.goto("/")
    reader.open_panel()
    reader.ask("Which options are there?")
    body = reader.wait_answer()

    tables = body.locator(".md-typeset__scrollwrap > .md-typeset__table > table")
    expect(tables).to_have_count(5)
    first = tables.first
    expect(first.locator("thead th")).to_have_text(["Option", "Default", "Read more"])
    expect(first.locator("tbody td a")).to_have_attribute("href", re.compile(r"/guide/#install$"))
    expect(first.locator("del")).to_have_text("Ask")
    # Material's look, as the page's own tables have it: a bordered box, bold headers.
    page_table = page.evaluate(
        """() => { const cell = document.createElement("th");
        const table = document.createElement("table"); table.append(cell);
        document.querySelector("article.md-content__inner").append(table);
        const s = getComputedStyle(table), h = getComputedStyle(cell);
        const out = [s.borderTopStyle, s.fontSize, h.fontWeight]; table.remove(); return out; }"""
    )
    drawn = first.evaluate(
        """(t) => { const s = getComputedStyle(t), h = getComputedStyle(t.querySelector("th"));
        return [s.borderTopStyle, s.fontSize, h.fontWeight]; }"""
    )
    assert drawn[0] == page_table[0] != "none" and drawn[2] == page_table[2], (drawn, page_table)
    # A wide table scrolls inside its own box; the panel itself does not scroll sideways.
    scroll = tables.last.evaluate(
        """(t) => { const box = t.closest(".md-typeset__scrollwrap"), panel = t.closest(".dp-body");
        return [box.scrollWidth > box.clientWidth, getComputedStyle(box).overflowX,
                panel.scrollWidth <= panel.clientWidth]; }"""
    )
    assert scroll == [True, "auto", True], scroll
    boxes = body.locator("li.task-list-item > input[type=checkbox][disabled]")
    expect(boxes).to_have_count(3)
    assert boxes.evaluate_all("(b) => b.map((x) => x.checked)") == [True, False, True]
    first.scroll_into_view_if_needed()
    reader.screenshot("markdown-contract-table")
