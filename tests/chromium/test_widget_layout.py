"""The widget's place on the page: at 1280 × 800 and 390 × 844, the launcher, the panel
and Material's footer navigation ("Previous", "Next") never overlap; on desktop the open
panel docks beside the article column, which stays readable. Screenshots of every kind
of reply (light, dark, phone) are saved for people to look at."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from browsing import Reader, result
from playwright.sync_api import Page, Route, expect

# A page with both footer links, scrolled to its end so the footer navigation shows.
PAGE = "/getting-started/quick-start/"


def box(page: Page, selector: str) -> dict[str, float]:
    found = page.locator(selector).first.bounding_box()
    assert found is not None, f"{selector} is not on screen"
    return found


def overlap(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return (
        a["x"] < b["x"] + b["width"]
        and b["x"] < a["x"] + a["width"]
        and a["y"] < b["y"] + b["height"]
        and b["y"] < a["y"] + a["height"]
    )


def at_the_end(page: Page) -> None:
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    expect(page.locator(".md-footer__link--next")).to_be_in_viewport()


@pytest.mark.parametrize("viewport", [(1280, 800), (390, 844)], ids=["desktop", "phone"])
def test_the_launcher_never_covers_the_footer_navigation(
    reader: Reader, viewport: tuple[int, int]
) -> None:
    page = reader.page
    page.set_viewport_size({"width": viewport[0], "height": viewport[1]})
    page.goto(PAGE)
    at_the_end(page)
    footer = box(page, ".md-footer__inner")
    launcher = box(page, ".dp-launcher")
    assert not overlap(launcher, footer), (launcher, footer)
    # Every footer link can still be clicked where it is drawn.
    for link in page.locator(".md-footer__link").all():
        at = link.bounding_box()
        assert at is not None
        hit = page.evaluate(
            "([x, y]) => document.elementFromPoint(x, y).closest('.md-footer__link') !== null",
            [at["x"] + at["width"] - 4, at["y"] + at["height"] / 2],
        )
        assert hit, f"something covers the footer link at {at}"
    reader.screenshot(f"footer-{viewport[0]}")


def test_on_desktop_the_open_panel_docks_beside_the_article(reader: Reader) -> None:
    page = reader.page
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(PAGE)
    # Closed: the launcher sits in the corner, clear of the article and the footer.
    article_before = box(page, ".md-content")
    assert not overlap(box(page, ".dp-launcher"), article_before)
    at_the_end(page)
    closed = box(page, ".dp-launcher")
    assert not overlap(closed, box(page, ".md-content")), closed
    assert not overlap(closed, box(page, ".md-footer__inner")), closed
    page.evaluate("window.scrollTo(0, 0)")

    reader.open_panel()
    expect(page.locator("html")).to_have_class(re.compile(r"\bdp-docked\b"))
    # Docked, the panel's close button stands in for the launcher.
    expect(page.locator(".dp-launcher")).to_be_hidden()
    for where in ("top", "end"):
        if where == "end":
            at_the_end(page)
        panel, article = box(page, "#dp-panel"), box(page, ".md-content")
        assert not overlap(panel, article), (where, panel, article)
        # Nothing of the page is under the panel: the page narrowed to make room.
        assert box(page, ".md-header")["width"] <= panel["x"], where
        if where == "end":
            footer = box(page, ".md-footer__inner")
            assert not overlap(panel, footer), (panel, footer)
    # Larger than the floating panel, the whole height; the article keeps a readable width.
    assert panel["width"] >= 440 and panel["height"] == 800, panel
    assert panel["x"] + panel["width"] == 1280, panel
    assert article["width"] >= 500, (article, article_before)
    expect(page.get_by_role("button", name="Close")).to_be_in_viewport()
    reader.screenshot("docked-1280")

    page.get_by_role("button", name="Close").click()
    expect(page.locator("html")).not_to_have_class(re.compile(r"\bdp-docked\b"))
    expect(page.locator(".dp-launcher")).to_be_focused()
    assert box(page, ".md-content")["width"] == article_before["width"]


def test_on_a_phone_the_open_panel_is_the_whole_screen(reader: Reader) -> None:
    page = reader.page
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(PAGE)
    at_the_end(page)
    reader.open_panel()
    panel = box(page, "#dp-panel")
    assert (panel["width"], panel["height"]) == (390, 844), panel
    # A modal there: the launcher steps aside rather than covering the question box.
    expect(page.locator(".dp-launcher")).to_be_hidden()
    reader.screenshot("mobile-panel")


# ------------------------------------------------------------------ screenshots

COVERED = "How do I exclude a page from the assistant?"
OFF_TOPIC = "How do I bake sourdough bread?"
CRAFTED = "Show me a crafted answer with headings and code"
FAILING = "Make the runtime fail on this one"
ANSWER = (
    "## Exclude a page\n\nAdd its path to `exclude` [1]:\n\n```yaml\nplugins:\n  - docpilot:\n"
    '      exclude: ["drafts/*"]  # left out\n```\n\n### Front matter\n\n'
    "Or set `docpilot: false` in the page's front matter [1].\n\n- one way\n- another way"
)
CITED = {
    "n": 1,
    "id": "/reference/plugin-configuration/#exclude",
    "url": "/reference/plugin-configuration/#exclude",
    "title": "exclude",
    "page_title": "Plugin configuration",
    "excerpt": "Pages left out of the assistant.",
}


def answer_some_questions_myself(page: Page) -> None:
    """A crafted answer (headings, highlighted code) and a failing runtime for two of the
    questions; the others go to the real runtime."""
    from docpilot_runtime.serve.highlight import highlight_result

    crafted = highlight_result(result(markdown=ANSWER, citations=[CITED]))

    def ask(route: Route) -> None:
        question = (route.request.post_data_json or {}).get("question")
        if question == CRAFTED:
            body = f"event: answer\ndata: {json.dumps(crafted)}\n\n"
            route.fulfill(status=200, body=body, headers={"Content-Type": "text/event-stream"})
        elif question == FAILING:
            route.fulfill(status=500, json={"error": {"message": "boom"}})
        else:
            route.fallback()

    page.route("**/api/ask", ask)


@pytest.mark.parametrize(
    ("look", "viewport"),
    [("light", (1280, 800)), ("dark", (1280, 800)), ("mobile", (390, 844))],
)
def test_screenshots_of_every_kind_of_reply(
    reader: Reader, look: str, viewport: tuple[int, int]
) -> None:
    page = reader.page
    page.set_viewport_size({"width": viewport[0], "height": viewport[1]})
    answer_some_questions_myself(page)
    page.goto("/reference/plugin-configuration/")
    if look == "dark":
        page.locator("label[title='Switch to dark mode']").first.click()
        expect(page.locator("body")).to_have_attribute("data-md-color-scheme", "slate")
    reader.open_panel()
    for n, (kind, question) in enumerate(
        [("answer", CRAFTED), ("passages", COVERED), ("refusal", OFF_TOPIC), ("error", FAILING)]
    ):
        reader.ask(question)
        turn = page.locator(".dp-turn").nth(n)
        if kind == "error":
            expect(turn.locator(".dp-error")).to_be_visible()
        else:
            expect(turn.locator(f".dp-body[data-kind='{kind}']")).to_be_visible(
                timeout=60_000
            )
        turn.evaluate("(t) => t.closest('.dp-log').scrollTop = t.offsetTop - 8")
        reader.screenshot(f"{look}-{kind}")
    if look == "dark":
        # The panel stands apart from the page: another background, the same palette.
        colours = page.evaluate(
            "[document.body, document.getElementById('dp-panel')]"
            ".map((e) => getComputedStyle(e).backgroundColor)"
        )
        assert colours[0] != colours[1], colours
