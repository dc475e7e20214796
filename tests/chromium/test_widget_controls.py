"""The controls readers expect of an assistant: stop, retry, copy, a character counter
with no silent cut, an unread mark, and sources shown as "Page › Section" with a preview."""

from __future__ import annotations

import re

from browsing import ANSWER_TIMEOUT_MS, Reader, result, serve_answer, with_widget_config
from playwright.sync_api import Page, expect

COVERED = "How do I exclude a page from the assistant?"
CODE = "plugins:\n  - docpilot:\n      exclude: [drafts/*]"
# Pipes and a colon after a marker: what the runtime's escaped Markdown wrote as \| and [1]\:.
MARKDOWN = f"Add the page to `exclude` [1]: drafts | private.\n\n```yaml\n{CODE}\n```"
CITATION = {
    "n": 1,
    "id": "/getting-started/quick-start/#4-ask-something",
    "url": "/getting-started/quick-start/#4-ask-something",
    "title": "4. Ask something",
    "page_title": "Quick start",
    "excerpt": "Open any page, press `A` and ask a question the docs answer.",
}


def use_slow_api(reader: Reader, slow_api: str, base_url: str) -> None:
    """The widget calls `slow_api`, a runtime on another origin that streams slowly."""
    page = reader.page
    with_widget_config(page, "/", lambda config: config.update(endpoint=slow_api))
    page.context.grant_permissions(["local-network-access"], origin=base_url)


def test_stop_aborts_the_request_and_offers_the_question_again(
    reader: Reader, slow_api: str, base_url: str
) -> None:
    page = reader.page
    use_slow_api(reader, slow_api, base_url)
    page.goto("/")
    reader.open_panel()
    reader.ask(COVERED)
    expect(page.locator(".dp-turn .dp-body")).to_contain_text(
        "Draft sentence one", timeout=ANSWER_TIMEOUT_MS
    )
    with page.expect_event("requestfailed") as failed:
        page.get_by_role("button", name="Stop").click()
    assert failed.value.url == f"{slow_api}/api/ask"

    error = page.locator(".dp-turn .dp-error")
    expect(error).to_contain_text("You stopped this answer.")
    expect(page.locator(".dp-input")).to_have_value(COVERED)
    expect(page.get_by_role("button", name="Send")).to_be_visible()
    # The final answer the stream would have sent never replaces the stop.
    expect(page.locator(".dp-body[data-kind]")).to_have_count(0)
    expect(error.get_by_role("button", name="Retry")).to_be_visible()


def test_copy_the_answer_as_clean_markdown_with_sources_and_a_code_block_as_text(
    reader: Reader, base_url: str
) -> None:
    page = reader.page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base_url)
    serve_answer(page, result(markdown=MARKDOWN, citations=[CITATION]))
    page.goto("/")
    reader.open_panel()
    reader.ask(COVERED)
    reader.wait_answer()

    page.get_by_role("button", name="Copy answer").click()
    expect(page.get_by_role("button", name="Copied")).to_be_visible()
    source = f"[1] Quick start › 4. Ask something: {base_url}{CITATION['url']}"  # spaces kept
    assert page.evaluate("navigator.clipboard.readText()") == f"{MARKDOWN}\n\n{source}"
    page.locator(".dp-body pre").hover()
    page.get_by_role("button", name="Copy code").click()
    assert page.evaluate("navigator.clipboard.readText()") == CODE
    # The button adds no text to the code block.
    expect(page.locator(".dp-body pre code")).to_have_text(CODE + "\n")


def test_a_question_over_the_limit_is_refused_in_full_never_cut(reader: Reader) -> None:
    page = reader.page
    page.goto("/")
    reader.open_panel()
    counter = page.locator(".dp-count")
    expect(counter).to_have_text("0 / 2,000")
    long = "Why? " * 400 + "And?"  # 2,004 characters
    page.locator(".dp-input").fill(long)
    expect(counter).to_have_text("2,004 / 2,000")
    page.locator(".dp-input").press("Enter")

    expect(page.locator(".dp-long")).to_contain_text("up to 2,000 characters")
    assert page.locator(".dp-input").input_value() == long
    assert reader.api_requests() == []
    expect(page.locator(".dp-turn")).to_have_count(0)
    # Shortened, it goes.
    page.locator(".dp-input").fill(COVERED)
    expect(page.locator(".dp-long")).to_be_hidden()
    page.locator(".dp-input").press("Enter")
    reader.wait_answer()
    assert [a["question"] for a in reader.asks()] == [COVERED]


def test_the_counter_follows_the_owner_s_limit_and_learns_the_runtime_s(
    reader: Reader,
) -> None:
    page = reader.page
    # The owner set 3,000 in mkdocs.yml; the runtime still has its default 2,000.
    with_widget_config(page, "/", lambda config: config.update(max_question_chars=3000))
    page.goto("/")
    reader.open_panel()
    counter = page.locator(".dp-count")
    expect(counter).to_have_text("0 / 3,000")
    long = "Why? " * 500  # 2,500 characters
    page.locator(".dp-input").fill(long)
    expect(counter).to_have_text("2,500 / 3,000")
    page.locator(".dp-input").press("Enter")
    # The runtime refuses it with its own limit: the widget says so and takes that limit.
    error = page.locator(".dp-turn .dp-error")
    expect(error).to_contain_text("up to 2,000 characters", timeout=ANSWER_TIMEOUT_MS)
    expect(counter).to_have_text("2,499 / 2,000")  # the question as sent, trimmed
    assert page.locator(".dp-input").input_value() == long.strip()
    page.locator(".dp-input").press("Enter")  # now refused here, before anything is sent
    expect(page.locator(".dp-long")).to_contain_text("up to 2,000 characters")
    assert len(reader.asks()) == 1


def test_closing_the_panel_mid_answer_marks_the_launcher_unread(
    reader: Reader, slow_api: str, base_url: str
) -> None:
    page = reader.page
    use_slow_api(reader, slow_api, base_url)
    page.goto("/")
    reader.open_panel()
    reader.ask(COVERED)
    expect(page.locator(".dp-steps li").first).to_be_visible(timeout=ANSWER_TIMEOUT_MS)
    page.get_by_role("button", name="Close").click()
    launcher = page.locator(".dp-launcher")
    expect(launcher).not_to_have_class(re.compile("dp-unread"))
    expect(launcher).to_have_class(re.compile("dp-unread"), timeout=ANSWER_TIMEOUT_MS)
    expect(launcher).to_have_attribute("aria-label", re.compile(r"\(new answer\)$"))
    launcher.click()
    expect(launcher).not_to_have_class(re.compile("dp-unread"))
    expect(page.locator(".dp-body[data-kind]")).to_have_text("Final answer, validated 1.")


def sources(page: Page) -> list[str]:
    return page.locator(".dp-cites li a").all_inner_texts()


def test_sources_read_page_then_section_with_a_preview_on_hover_and_focus(reader: Reader) -> None:
    page = reader.page
    serve_answer(page, result(markdown=MARKDOWN, citations=[CITATION]))
    page.goto("/")
    reader.open_panel()
    reader.ask(COVERED)
    reader.wait_answer()

    assert sources(page) == ["Quick start › 4. Ask something"]
    item = page.locator(".dp-cites li").first
    # One number, the citation's: a numbered heading is not numbered again ("1. 4.").
    assert " ".join(item.inner_text().split()) == "1 Quick start › 4. Ask something"
    assert item.evaluate("(li) => getComputedStyle(li.parentElement).listStyleType") == "none"
    preview = item.locator(".dp-preview")
    expect(preview).to_be_hidden()
    item.locator("a").hover()
    expect(preview).to_be_visible()
    # The section's words as its page shows them: inline code as code, not backticks.
    shown = "Open any page, press A and ask a question the docs answer."
    expect(preview).to_have_text(shown)
    expect(preview.locator("code")).to_have_text("A")
    page.mouse.move(0, 0)
    expect(preview).to_be_hidden()
    item.locator("a").focus()
    expect(preview).to_be_visible()
    expect(item.locator("a")).to_have_accessible_description(shown)


def test_a_passages_answer_from_the_runtime_names_page_and_section(reader: Reader) -> None:
    page = reader.page
    page.goto("/")
    reader.open_panel()
    reader.ask(COVERED)
    reader.wait_answer()
    for label in sources(page):
        page_title, _, section = label.partition(" › ")
        assert page_title and section and not re.match(r"\d+\. \d+\.", label), label
    for tip in page.locator(".dp-preview").all_text_contents():
        assert 0 < len(tip) <= 200
