"""The reader's widget on example-site, served by the real runtime, in Chromium."""

from __future__ import annotations

import re
from typing import Any

from browsing import (
    ANSWER_TIMEOUT_MS,
    Reader,
    crafted_blocks,
    result,
    serve_answer,
    with_widget_config,
)
from playwright.sync_api import expect

COVERED = "How do I exclude a page from the assistant?"
OFF_TOPIC = "How do I bake sourdough bread?"


def test_covered_question_streams_progress_then_a_cited_answer(reader: Reader) -> None:
    page = reader.page
    page.goto("/")
    reader.open_panel()
    reader.ask(COVERED)
    body = reader.wait_answer()

    assert body.get_attribute("data-kind") == "passages"
    seen = page.evaluate("window.__docpilotSeen")
    kinds = [kind for kind, _ in seen]
    assert kinds.index("progress") < kinds.index("citations"), seen
    assert any(
        re.fullmatch(r"Found \d+ results", text) for kind, text in seen if kind == "progress"
    )
    # The answer is rendered Markdown with citation markers linking to the list below it.
    citations = page.locator(".dp-cites li a")
    assert citations.count() >= 2
    assert body.locator("a.dp-cite").count() >= 2
    first = citations.first.get_attribute("href") or ""
    assert first.startswith(reader.page.url.split("/", 3)[0] + "//") and "#" in first
    asked = reader.asks()
    assert len(asked) == 1
    assert asked[0]["question"] == COVERED and asked[0]["page"] == "/"
    ask_request = next(r for r in reader.api_requests() if r.url.endswith("/api/ask"))
    assert ask_request.headers["accept"] == "text/event-stream"


def test_deltas_appear_live_then_the_answer_replaces_them(
    reader: Reader, slow_api: str, base_url: str
) -> None:
    page = reader.page
    # A runtime on another origin (`endpoint: <URL>`), streaming like a model would.
    with_widget_config(page, "/", lambda config: config.update(endpoint=slow_api))
    # Chromium asks before a page calls another loopback origin (Local Network Access);
    # a deployed site calling its public runtime is not asked.
    page.context.grant_permissions(["local-network-access"], origin=base_url)
    page.goto("/")
    reader.open_panel()
    reader.ask(COVERED)
    draft = page.locator(".dp-turn .dp-body")
    expect(draft).to_contain_text("Draft sentence one", timeout=ANSWER_TIMEOUT_MS)
    body = reader.wait_answer()

    expect(body).to_have_text("Final answer, validated 1.")
    seen = page.evaluate("window.__docpilotSeen")
    progress = [text for kind, text in seen if kind == "progress"]
    assert progress[-2:] == ["Found 2 results", "Reading Plugin configuration"]
    drafts = [text for kind, text in seen if kind == "draft"]
    assert drafts and drafts[-1] == "Draft sentence one, draft sentence two [1]."
    # Screen readers heard the progress and the streamed text from the live region.
    live = page.locator("#docpilot [aria-live='polite']")
    expect(live).to_have_text("Draft sentence one, draft sentence two [1].")
    (request,) = [r for r in reader.api_requests() if r.url.endswith("/api/ask")]
    assert request.url == f"{slow_api}/api/ask"


def test_citation_marker_and_link_land_on_the_cited_anchor(reader: Reader) -> None:
    page = reader.page
    page.goto("/")
    page.evaluate("window.__sameDocument = true")
    reader.open_panel()
    reader.ask(COVERED)
    reader.wait_answer()

    # A marker in the text moves focus to its entry in the list of sources.
    page.locator(".dp-body a.dp-cite").first.click()
    expect(page.locator(".dp-cites li a").first).to_be_focused()
    # The entry leads to the page and the section it cites.
    target = page.locator(".dp-cites li a").first
    href = target.get_attribute("href") or ""
    path, anchor = href.split("#", 1)
    target.click()
    page.wait_for_url(re.compile(re.escape(path.split("//", 1)[1].split("/", 1)[1]) + "#"))
    assert page.evaluate("location.hash") == f"#{anchor}"
    # Instant navigation swaps the article in after the URL changes: wait for it.
    expect(page.locator(f"[id='{anchor}']")).to_have_count(1)
    # Material's instant navigation kept the document, the panel and the conversation.
    assert page.evaluate("window.__sameDocument") is True
    expect(page.locator(".dp-turn")).to_have_count(1)


def test_off_topic_question_shows_the_closest_pages_and_the_support_link(reader: Reader) -> None:
    page = reader.page
    with_widget_config(
        page, "/", lambda config: config.update(support_url="mailto:docs@example.com")
    )
    page.goto("/")
    reader.open_panel()
    reader.ask(OFF_TOPIC)
    body = reader.wait_answer()

    assert body.get_attribute("data-kind") == "refusal"
    links = body.locator("li a")
    assert links.count() >= 1
    for href in links.evaluate_all("(as) => as.map((a) => a.href)"):
        assert href.startswith(reader.page.url.rstrip("/"))
    expect(page.get_by_role("link", name="Ask a person")).to_have_attribute(
        "href", "mailto:docs@example.com"
    )
    expect(page.locator(".dp-cites")).to_have_count(0)  # a refusal cites nothing
    expect(page.locator(".dp-fb")).to_have_count(1)  # but can still be rated


def test_an_empty_panel_offers_the_suggested_questions(reader: Reader) -> None:
    page = reader.page
    page.goto("/")
    reader.open_panel()
    suggestions = page.locator(".dp-suggest button")
    expect(suggestions).to_have_text(
        [
            "How do I install DocPilot?",
            "Can DocPilot run without a server?",
            "How do I exclude a page from the assistant?",
        ]
    )
    suggestions.nth(1).click()
    reader.wait_answer()
    assert reader.asks()[0]["question"] == "Can DocPilot run without a server?"
    expect(page.locator(".dp-suggest")).to_have_count(0)


def test_hello_gets_the_greeting_template(reader: Reader) -> None:
    page = reader.page
    page.goto("/")
    reader.open_panel()
    reader.ask("hello")
    body = reader.wait_answer()

    assert body.get_attribute("data-kind") == "social"
    expect(body).to_contain_text("DocPilot")
    expect(page.locator(".dp-cites, .dp-fb")).to_have_count(0)


HOSTILE = "\n\n".join(
    [
        'Try <img src=x onerror="window.__pwned=1;alert(1)"> and <script>window.__pwned=2</script> [1]',
        '[click me](javascript:alert(3)) and [data](data:text/html,<b>x</b>) and <a href="javascript:alert(4)">raw</a>',
        '<iframe src="javascript:alert(5)"></iframe><svg onload=alert(6)>',
        "```html\n<script>alert(7)</script>\n```",
        "- **bold <b onmouseover=alert(8)>x</b>**\n- `<img src=y onerror=alert(9)>`",
        "| a | b |\n|---|---|\n| <img src=z onerror=alert(10)> | [ok](/reference/cli/) |",
    ]
)


# A tree no validator would send (a compromised runtime): the widget still draws only
# its own elements, text as text, and links only to http(s) and site paths.
HOSTILE_TREE = [
    {"t": "script", "c": ["window.__pwned=4"]},
    {"t": "img", "src": "x", "onerror": "window.__pwned=5", "c": []},
    {
        "t": "p",
        "onclick": "window.__pwned=6",
        "c": ["<b>text</b>", {"t": "a", "href": "javascript:alert(15)", "c": ["js"]}],
    },
    {"t": "pre", "lang": 'x" onmouseover="alert(16)', "c": ["<i>code</i>"]},
    {"t": "iframe", "c": [{"t": "p", "c": ["kept text"]}]},
]
HOSTILE_CITATIONS = [
    {"n": 1, "id": "x", "url": "javascript:alert(11)", "title": "<img src=q onerror=alert(12)>"}
]


def test_hostile_markdown_in_an_answer_stays_inert(reader: Reader) -> None:
    page = reader.page
    serve_answer(
        page,
        result(
            markdown=HOSTILE,
            blocks=[*crafted_blocks(HOSTILE, HOSTILE_CITATIONS), *HOSTILE_TREE],
            citations=HOSTILE_CITATIONS,
            closest=[{"url": "javascript:alert(13)", "title": "<b>bold</b>"}],
        ),
        deltas=('Try <img src=x onerror="window.__pwned=3;alert(14)"> ', "streamed"),
    )
    page.goto("/")
    reader.open_panel()
    reader.ask("Show me something hostile")
    body = reader.wait_answer()
    page.wait_for_timeout(300)  # let any payload that slipped through fire

    assert reader.dialogs == []
    assert page.evaluate("window.__pwned") is None
    widget = page.locator("#docpilot")
    assert widget.locator("img, script, iframe, b, svg[onload]").count() == 0
    hrefs = widget.locator("a").evaluate_all("(as) => as.map((a) => a.getAttribute('href'))")
    assert not [h for h in hrefs if h and not h.startswith(("http://", "#"))], hrefs
    # A tag in the answer is dropped and the text around and inside it stays, as text
    # (the one Markdown contract, tests/markdown_contract.yaml); the script never ran.
    expect(body.locator("p").first).to_contain_text("Try")
    expect(body.locator("p").first).to_contain_text("and window.__pwned=2")
    expect(body.locator("pre code").first).to_have_text("<script>alert(7)</script>")
    expect(body.locator("a", has_text="ok")).to_have_attribute(
        "href", re.compile(r"^http://127\.0\.0\.1:\d+/reference/cli/$")
    )
    expect(body).to_contain_text("<b>text</b>")
    expect(body).to_contain_text("kept text")
    assert body.locator("pre[onmouseover], code[onmouseover], p[onclick]").count() == 0
    # Its number, then its title as text.
    expect(page.locator(".dp-cites li")).to_have_text(
        re.compile(r"^\d+" + re.escape("<img src=q onerror=alert(12)>") + "$")
    )


def test_tentative_answer_with_actions_that_dispatch_an_event_or_open_a_url(reader: Reader) -> None:
    page = reader.page

    def declare(config: dict[str, Any]) -> None:
        config["actions"] = {"open_upgrade": "https://upgrade.example/?plan={plan}"}

    with_widget_config(page, "/reference/cli/", declare)
    serve_answer(
        page,
        result(
            markdown="Start the wizard [1].",
            tentative=True,
            citations=[{"n": 1, "id": "/reference/cli/", "url": "/reference/cli/", "title": "CLI"}],
            actions=[
                {"name": "start_wizard", "arguments": {"step": 2}},
                {"name": "open_upgrade", "arguments": {"plan": "team & co"}},
            ],
        ),
    )
    page.goto("/reference/cli/")
    page.evaluate(
        "document.addEventListener('docpilot:action', (e) => { window.__action = e.detail })"
    )
    reader.open_panel()
    reader.ask("Can you start the wizard?")
    reader.wait_answer()
    expect(page.locator(".dp-badge")).to_have_text("Tentative")

    page.get_by_role("button", name="Start wizard").click()
    assert page.evaluate("window.__action") == {"name": "start_wizard", "arguments": {"step": 2}}
    # The declared URL opens in a new tab, with the arguments URL-encoded into it.
    page.context.route("https://upgrade.example/**", lambda route: route.fulfill(body="upgrade"))
    with page.expect_popup() as popup:
        page.get_by_role("button", name="Open upgrade").click()
    assert popup.value.url == "https://upgrade.example/?plan=team%20%26%20co"


def test_selected_text_is_sent_as_a_quote_with_the_next_question(reader: Reader) -> None:
    page = reader.page
    page.goto("/")
    reader.open_panel()
    reader.ask(COVERED)
    body = reader.wait_answer()

    # Select the first paragraph of the answer, as a mouse drag would.
    selected = body.locator("p").first.evaluate(
        """(p) => {
            p.scrollIntoView({block: "center"});
            const range = document.createRange();
            range.selectNodeContents(p);
            const selection = document.getSelection();
            selection.removeAllRanges();
            selection.addRange(range);
            return selection.toString().trim();
        }"""
    )
    page.get_by_role("button", name="Ask about this", exact=True).click()
    chip = page.locator(".dp-chip")
    expect(chip).to_be_visible()
    expect(chip.locator("q")).to_have_text(selected)
    expect(page.locator(".dp-input")).to_be_focused()
    reader.ask("What does that mean for search?")
    reader.wait_answer(1)

    second = reader.asks()[1]
    assert second["quote"] == selected
    assert [item["question"] for item in second["history"]] == [COVERED]
    assert second["history"][0]["kind"] == "passages"
    expect(chip).to_be_hidden()
    expect(page.locator(".dp-turn").nth(1).locator(".dp-q blockquote")).to_have_text(selected)


def test_a_quote_can_be_removed_before_asking(reader: Reader) -> None:
    page = reader.page
    page.goto("/")
    reader.open_panel()
    reader.ask(COVERED)
    body = reader.wait_answer()
    body.locator("p").first.evaluate(
        "(p) => { p.scrollIntoView(); const r = document.createRange(); r.selectNodeContents(p);"
        " getSelection().removeAllRanges(); getSelection().addRange(r); }"
    )
    page.get_by_role("button", name="Ask about this", exact=True).click()
    page.get_by_role("button", name="Remove quote").click()
    expect(page.locator(".dp-chip")).to_be_hidden()
    reader.ask("And for search?")
    reader.wait_answer(1)
    assert "quote" not in reader.asks()[1]


def test_instant_navigation_keeps_the_conversation_and_updates_page(reader: Reader) -> None:
    page = reader.page
    page.goto("/getting-started/installation/")
    page.evaluate("window.__sameDocument = true")
    reader.open_panel()
    reader.ask(COVERED)
    reader.wait_answer()

    # Follow a link in Material's navigation: instant navigation swaps the content only.
    page.locator(".md-nav__link[href$='reference/cli/']").first.click()
    page.wait_for_url("**/reference/cli/")
    expect(page.locator("h1")).to_contain_text("CLI")
    assert page.evaluate("window.__sameDocument") is True
    expect(page.locator(".dp-turn")).to_have_count(1)
    expect(page.locator("#dp-panel")).to_be_visible()

    reader.ask("What is the default port?")
    reader.wait_answer(1)
    first, second = reader.asks()
    assert first["page"] == "/getting-started/installation/"
    assert second["page"] == "/reference/cli/"
    assert [item["question"] for item in second["history"]] == [COVERED]
    # The worker and its Pyodide survived the navigation: one worker, one boot (each boot
    # fetches the lock file afresh) for both pages.
    loaded = [r.url for r in reader.requests]
    started = [u for u in loaded if u.endswith(("/worker.js", "-lock.json"))]
    assert len(started) == 2, started


def test_a_full_page_load_restores_the_conversation(reader: Reader) -> None:
    page = reader.page
    page.goto("/")
    reader.open_panel()
    reader.ask(COVERED)
    reader.wait_answer()
    page.goto("/faq/")
    expect(page.locator("#dp-panel")).to_be_visible()
    expect(page.locator(".dp-turn .dp-q")).to_have_text(COVERED)
    page.get_by_role("button", name="New chat").click()
    expect(page.locator(".dp-turn")).to_have_count(0)
    assert page.evaluate("sessionStorage.getItem('docpilot:chat')") is None


def test_keyboard_only_reader(reader: Reader) -> None:
    page = reader.page
    page.goto("/")
    page.locator("body").click(position={"x": 5, "y": 300})  # focus the page, not a field
    page.keyboard.press("a")
    expect(page.locator("#dp-panel")).to_be_visible()
    expect(page.locator(".dp-input")).to_be_focused()
    page.keyboard.type(COVERED)
    page.keyboard.press("Enter")
    reader.wait_answer()

    # Tab from the question box's neighbourhood into the answer until a source link has focus.
    page.locator(".dp-head button").last.focus()
    for _ in range(40):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.closest('.dp-cites') !== null"):
            break
    else:
        raise AssertionError("no citation link is reachable with Tab")
    page.keyboard.press("Escape")
    expect(page.locator("#dp-panel")).to_be_hidden()
    expect(page.locator(".dp-launcher")).to_be_focused()


def test_the_shortcut_key_is_text_inside_a_text_field(reader: Reader) -> None:
    page = reader.page
    page.goto("/")
    page.locator(".md-search__input").focus()
    page.keyboard.type("a")
    expect(page.locator("#dp-panel")).to_be_hidden()
    expect(page.locator(".md-search__input")).to_have_value("a")


def test_nothing_is_stored_or_sent_before_the_first_question(reader: Reader) -> None:
    page = reader.page
    page.goto("/")
    reader.open_panel()
    page.locator(".dp-input").fill("How do I")
    page.wait_for_timeout(500)
    page.get_by_role("button", name="Close").click()
    reader.open_panel()

    assert reader.api_requests() == []
    assert page.evaluate("sessionStorage.length") == 0
    assert page.evaluate("localStorage.length") == 0 or page.evaluate(
        "Object.keys(localStorage).every((k) => !k.startsWith('docpilot'))"
    )
    reader.ask(COVERED)
    reader.wait_answer()
    assert page.evaluate("sessionStorage.getItem('docpilot:chat')") is not None
    assert len(reader.api_requests()) == 1


def test_past_conversations_are_kept_and_reopened_when_history_is_on(reader: Reader) -> None:
    page = reader.page
    with_widget_config(page, "/", lambda config: config.update(history=True))
    page.goto("/")
    reader.open_panel()
    reader.ask(COVERED)
    reader.wait_answer()
    page.get_by_role("button", name="New chat").click()
    page.get_by_role("button", name="Past conversations").click()
    page.get_by_role("button", name=re.compile(re.escape(COVERED))).click()
    expect(page.locator(".dp-turn .dp-q")).to_have_text(COVERED)
    reader.ask("And from search?")
    reader.wait_answer(1)
    # A reopened conversation travels without model summaries (the runtime builds skeletons).
    history = reader.asks()[1]["history"]
    assert [h["question"] for h in history] == [COVERED]
    assert "summary" not in history[0]


def test_feedback_posts_rating_reasons_and_note(reader: Reader) -> None:
    page = reader.page
    page.goto("/")
    reader.open_panel()
    reader.ask(COVERED)
    reader.wait_answer()
    page.get_by_role("button", name="Not helpful").click()
    page.get_by_role("button", name="Incomplete").click()
    page.get_by_role("textbox", name=re.compile("What was wrong")).fill(
        "Missing the front matter way"
    )
    with page.expect_response("**/api/feedback") as response:
        page.get_by_role("button", name="Send feedback").click()
    assert response.value.status == 204
    sent = response.value.request.post_data_json
    turn_id = sent["turn_id"]
    assert re.fullmatch(r"[0-9a-f]{32}", turn_id)
    assert sent == {
        "turn_id": turn_id,
        "rating": "down",
        "reasons": ["incomplete"],
        "note": "Missing the front matter way",
    }
    expect(page.locator(".dp-fb-done")).to_have_text("Thanks for your feedback.")


def test_screenshots_light_dark_and_mobile(reader: Reader) -> None:
    page = reader.page
    page.set_viewport_size({"width": 1280, "height": 860})
    page.goto("/guides/static-sites/")
    reader.open_panel()
    reader.ask(COVERED)
    reader.wait_answer()
    reader.screenshot("light")

    # Material's own palette toggle, as a reader switches it.
    page.locator("label[title='Switch to dark mode']").first.click()
    expect(page.locator("body")).to_have_attribute("data-md-color-scheme", "slate")
    expect(page.locator("#dp-panel")).to_be_visible()
    # The panel takes the slate palette's colours from Material's custom properties, a
    # shade lighter than the page so that it stands apart from it.
    colours = page.evaluate(
        "[document.body, document.getElementById('dp-panel')]"
        ".map((e) => getComputedStyle(e).backgroundColor)"
    )
    assert colours[0] != colours[1], colours
    assert "255, 255, 255" not in colours[1], colours
    reader.screenshot("dark")

    page.locator("label[title='Switch to light mode']").first.click()
    page.set_viewport_size({"width": 390, "height": 780})
    page.reload()
    panel = page.locator("#dp-panel")
    expect(panel).to_be_visible()
    box = panel.bounding_box()
    assert box is not None and box["width"] == 390 and box["height"] == 780
    reader.screenshot("mobile")
    # Full screen, the panel keeps Tab inside it (the page behind it is hidden).
    page.locator(".dp-input").focus()
    for _ in range(25):
        page.keyboard.press("Tab")
        assert page.evaluate("document.getElementById('dp-panel').contains(document.activeElement)")
    page.get_by_role("button", name="Close").click()
    reader.screenshot("mobile-closed")
