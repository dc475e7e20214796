"""Asking from where readers already are: an "Ask" entry in Material's search results (a
keyword query waits as a draft), "Ask about this page" and "Copy this page as Markdown" in
the panel, the "AI answer" label with "Report a wrong answer", a question typed while
Pyodide starts that survives a reload; each option can be turned off."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from browsing import (
    ANSWER_TIMEOUT_MS,
    Reader,
    file_server,
    mkdocs_build,
    result,
    serve_answer,
    with_widget_config,
)
from playwright.sync_api import Page, Route, expect

STRINGS = json.loads((Path(__file__).parents[2] / "widget/i18n/en.json").read_text("utf-8"))
COVERED = "How do I exclude a page from the assistant?"


def search(page: Page, query: str) -> None:
    page.keyboard.press("s")  # Material's shortcut into its search box
    expect(page.locator(".md-search__input")).to_be_focused()
    page.locator(".md-search__input").fill(query)


def test_a_keyword_search_opens_the_panel_with_the_query_as_a_draft(reader: Reader) -> None:
    page = reader.page
    page.goto("/")
    search(page, "exclude pages")
    entry = page.locator(".dp-search")
    expect(entry).to_have_text(f"{STRINGS['search_ask']}: “exclude pages”")
    entry.click()
    expect(page.locator("#dp-panel")).to_be_visible()
    box = page.locator(".dp-input")
    expect(box).to_have_value("exclude pages")
    expect(box).to_be_focused()
    expect(page.locator("#__search")).not_to_be_checked()  # Material's search closed
    assert reader.asks() == []  # two words: not a question until the reader sends it


def test_a_question_typed_in_search_is_asked_at_once(reader: Reader) -> None:
    page = reader.page
    page.goto("/")
    search(page, COVERED)
    page.locator(".dp-search").click()
    assert reader.wait_answer().get_attribute("data-kind") == "passages"
    assert [a["question"] for a in reader.asks()] == [COVERED]


@pytest.mark.parametrize("theme", ["mkdocs", "readthedocs"])
def test_the_built_in_themes_search_hands_over_too(page: Page, make_site: Any, theme: str) -> None:
    pages = {"index.md": "# Home\n\nLeave pages out with the exclude option.\n"}
    config = make_site(pages, {"endpoint": "browser"}, theme={"name": theme})
    done = mkdocs_build(config)
    assert done.returncode == 0, done.stderr
    with file_server(config.parent / "site") as base:
        page.goto(base + "/")
        if theme == "mkdocs":  # its search box is in a dialog the navigation bar opens
            page.get_by_role("link", name="Search").click()
            page.locator("#mkdocs-search-query").fill("exclude pages")
        else:  # the sidebar's box, whose results are a page of their own
            page.locator("#rtd-search-form [name=q]").fill("exclude pages")
        entry = page.locator(".dp-search")
        expect(entry).to_have_text(f"{STRINGS['search_ask']}: “exclude pages”")
        entry.click()
        expect(page.locator(".dp-input")).to_have_value("exclude pages")
        expect(page.locator(".dp-input")).to_be_focused()


def test_ask_about_this_page_starts_a_question_naming_it(reader: Reader) -> None:
    page = reader.page
    page.goto("/reference/cli/")
    reader.open_panel()
    title = page.title().split(" - ")[0]
    page.get_by_role("button", name=STRINGS["ask_page"]).click()
    box = page.locator(".dp-input")
    expect(box).to_have_value(STRINGS["ask_page_prefix"].replace("{title}", title))
    expect(box).to_be_focused()
    page.keyboard.type("which flags does index take?")
    page.keyboard.press("Enter")
    reader.wait_answer()
    (sent,) = reader.asks()
    assert sent["question"].startswith("About “") and sent["page"] == "/reference/cli/"


def test_copy_this_page_copies_its_markdown_copy_or_else_its_text(
    reader: Reader, base_url: str
) -> None:
    page = reader.page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base_url)
    page.goto("/reference/cli/")
    reader.open_panel()
    copy = page.locator(".dp-page button").nth(1)
    expect(copy).to_have_text(STRINGS["copy_page"])
    # example-site is built without markdown_pages: the page's text as rendered.
    copy.click()
    expect(copy).to_have_text(STRINGS["copied"])
    copied = page.evaluate("navigator.clipboard.readText()")
    heading = page.locator("article h1").inner_text().replace("¶", "").strip()
    assert copied.startswith(heading) and "¶" not in copied, copied[:200]
    expect(copy).to_have_text(STRINGS["copy_page"], timeout=5_000)
    # Where markdown_pages wrote index.md beside the page, that file.
    markdown = "# CLI\n\nThe `docpilot` command.\n"
    page.route(
        "**/reference/cli/index.md",
        lambda route: route.fulfill(body=markdown, content_type="text/markdown"),
    )
    copy.click()
    expect(copy).to_have_text(STRINGS["copied"])
    assert page.evaluate("navigator.clipboard.readText()") == markdown


def test_a_models_answer_is_labelled_and_can_be_reported_as_wrong(reader: Reader) -> None:
    page = reader.page
    sent: list[Any] = []

    def feedback(route: Route) -> None:
        sent.append(route.request.post_data_json)
        route.fulfill(status=204)

    page.route("**/api/feedback", feedback)
    serve_answer(page, result(markdown="Add the page to `exclude`."))
    page.goto("/")
    reader.open_panel()
    reader.ask(COVERED)
    reader.wait_answer()
    expect(page.locator(".dp-ai")).to_have_text(f"{STRINGS['ai_label']} · {STRINGS['ai_hint']}")
    page.get_by_role("button", name=STRINGS["report"]).click()
    expect(page.get_by_role("button", name="Not helpful")).to_have_attribute("aria-pressed", "true")
    expect(page.get_by_role("button", name="Incorrect")).to_have_attribute("aria-pressed", "true")
    page.locator(".dp-note").fill("It is `exclude`, under the plugin, not the theme.")
    page.get_by_role("button", name="Send feedback").click()
    expect(page.locator(".dp-fb-done")).to_have_text(STRINGS["thanks"])
    assert sent[-1]["rating"] == "down" and sent[-1]["reasons"] == ["incorrect"]
    assert sent[-1]["note"].startswith("It is `exclude`")


def test_passages_quoted_from_the_docs_carry_no_ai_label(reader: Reader) -> None:
    page = reader.page
    page.goto("/")
    reader.open_panel()
    reader.ask(COVERED)
    assert reader.wait_answer().get_attribute("data-kind") == "passages"
    expect(page.locator(".dp-ai")).to_have_count(0)
    expect(page.get_by_role("button", name=STRINGS["report"])).to_have_count(0)


def test_each_entry_point_can_be_turned_off(reader: Reader) -> None:
    page = reader.page
    off = {"search_handoff": False, "ask_about_page": False, "copy_page": False}
    with_widget_config(page, "/", lambda config: config.update(off, ai_notice=False))
    serve_answer(page, result(markdown="Add the page to `exclude`."))
    page.goto("/")
    search(page, "exclude pages")
    expect(page.locator(".md-search-result__meta")).to_be_visible()
    expect(page.locator(".dp-search")).to_have_count(0)
    page.keyboard.press("Escape")
    reader.open_panel()
    expect(page.locator(".dp-page")).to_have_count(0)
    reader.ask(COVERED)
    reader.wait_answer()
    expect(page.locator(".dp-ai")).to_have_count(0)
    expect(page.get_by_role("button", name=STRINGS["report"])).to_have_count(0)
    expect(page.get_by_role("button", name="Not helpful")).to_be_visible()


@pytest.mark.cold_pyodide
def test_a_question_sent_while_pyodide_starts_is_back_in_the_box_after_a_reload(
    reader: Reader,
) -> None:
    page = reader.page
    held: list[Route] = []
    page.context.route("**/*.wasm", lambda route: held.append(route))  # Pyodide still loading
    page.goto("/")
    reader.open_panel()
    reader.ask(COVERED)
    expect(page.locator(".dp-turn .dp-steps li")).to_have_text(STRINGS["preparing"])
    page.context.unroute("**/*.wasm")
    page.reload()
    box = page.locator(".dp-input")
    expect(box).to_have_value(COVERED, timeout=ANSWER_TIMEOUT_MS)
    expect(page.locator("#dp-panel")).to_be_visible()
    assert page.evaluate("sessionStorage.getItem('docpilot:draft')") is None
    assert reader.asks() == []  # never sent: it had not been checked yet
    box.press("Enter")
    assert reader.wait_answer().get_attribute("data-kind") == "passages"
