"""The widget's place on the page: at 1280 × 800 and 390 × 844, the launcher, the panel
and Material's footer navigation ("Previous", "Next") never overlap."""

from __future__ import annotations

from typing import Any

import pytest
from browsing import Reader
from playwright.sync_api import Page, expect

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


def test_on_desktop_the_open_panel_keeps_clear_of_the_launcher_and_the_footer(
    reader: Reader,
) -> None:
    page = reader.page
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(PAGE)
    reader.open_panel()
    at_the_end(page)
    panel, launcher = box(page, "#dp-panel"), box(page, ".dp-launcher")
    footer = box(page, ".md-footer__inner")
    assert not overlap(panel, launcher), (panel, launcher)
    assert not overlap(panel, footer), (panel, footer)
    assert not overlap(launcher, footer), (launcher, footer)
    assert panel["y"] >= 0 and panel["height"] > 200, panel


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
