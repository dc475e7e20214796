"""Code in answers looks like the site's own code: where a runtime answers, its tokens
carry the Pygments classes pymdownx.highlight gives the pages, so Material's stylesheet
colours them the same; in static mode code is plain. Every block has a copy button."""

from __future__ import annotations

from browsing import Reader, result, serve_answer
from playwright.sync_api import expect

COVERED = "How do I exclude a page from the assistant?"
COLOUR = "(e) => getComputedStyle(e).color"


def test_quoted_code_is_coloured_like_the_site_s_own(reader: Reader) -> None:
    page = reader.page
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto("/reference/plugin-configuration/")
    # The page's own YAML, as pymdownx.highlight wrote it.
    site_tag = page.locator(".md-content .highlight code span.nt").first
    site_colour = site_tag.evaluate(COLOUR)
    reader.open_panel()
    reader.ask(COVERED)
    body = reader.wait_answer()
    code = body.locator(".highlight > pre > code").first
    tag = code.locator("span.nt").first
    expect(tag).to_be_visible()
    assert tag.evaluate(COLOUR) == site_colour
    assert code.evaluate(COLOUR) != site_colour, "the tokens are coloured, not the block"
    # The spans spell the code exactly: copying it gives the text, with no markup.
    assert "<span" not in code.inner_text()


def test_only_short_pygments_classes_become_spans(reader: Reader) -> None:
    page = reader.page
    blocks = [
        {
            "t": "pre",
            "lang": "yaml",
            "c": ["a: <b>1</b>"],
            "hl": [["nt", "a"], ["p", ":"], ["x onclick=alert(1)", " "], ["l", "<b>1</b>"]],
        },
        # Pairs that do not spell the code are ignored: the block is drawn plain.
        {"t": "pre", "lang": "yaml", "c": ["safe"], "hl": [["k", "other"]]},
    ]
    serve_answer(page, result(markdown="x", blocks=blocks))
    page.goto("/")
    reader.open_panel()
    reader.ask(COVERED)
    body = reader.wait_answer()
    first, second = body.locator("pre code").all()
    expect(first).to_have_text("a: <b>1</b>")
    assert first.evaluate("(c) => [...c.children].map((s) => s.className)") == ["nt", "p", "l"]
    assert body.locator("[onclick], b").count() == 0
    expect(second).to_have_text("safe")
    assert second.evaluate("(c) => c.children.length") == 0
    expect(body.get_by_role("button", name="Copy code")).to_have_count(2)


def test_static_mode_draws_code_plain(reader: Reader, static_server: str) -> None:
    page = reader.page
    page.goto(f"{static_server}/")
    reader.open_panel()
    reader.ask(COVERED)
    body = reader.wait_answer()
    code = body.locator(".highlight > pre > code").first
    expect(code).to_contain_text("exclude")
    assert code.evaluate("(c) => c.children.length") == 0
