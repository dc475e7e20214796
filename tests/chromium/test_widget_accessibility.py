"""The widget for keyboard and screen-reader users: a log that is busy while it streams,
a live region that speaks plain text, a Tab order from the question into the answer, and
focus back on the launcher when the panel closes."""

from __future__ import annotations

from browsing import Reader, result, sse
from playwright.sync_api import Route, expect

QUESTION = "How do I configure the plugin?"
CITATION = {
    "n": 1,
    "id": "/reference/plugin-configuration/#exclude",
    "url": "/reference/plugin-configuration/#exclude",
    "title": "exclude",
    "page_title": "Plugin configuration",
    "excerpt": "Pages to leave out of the bundle.",
}
# A streamed answer with a heading, code and a table-like line: what Markdown would read
# aloud as "## Overview", "```yaml" and pipes.
BLOCKS = [
    {"t": "h2", "c": ["Overview"]},
    {"t": "p", "c": ["Set ", {"t": "code", "c": ["exclude"]}, " ", {"t": "cite", "n": 1}, "."]},
    {"t": "pre", "lang": "yaml", "c": ["exclude: [drafts/*]"]},
]
ANSWER = result(
    markdown="## Overview\n\nSet `exclude` [1].\n\n```yaml\nexclude: [drafts/*]\n```",
    blocks=BLOCKS,
    citations=[CITATION],
)


BUSY_RECORDER = """
window.__busy = [];
new MutationObserver((records) => {
  for (const r of records) if (r.target.matches('.dp-log')) window.__busy.push(r.target.getAttribute('aria-busy'));
}).observe(document, {attributes: true, attributeFilter: ['aria-busy'], subtree: true});
"""


def release(route: Route) -> None:
    body = sse(
        ("progress", {"stage": "retrieval", "message": "Found 1 results"}),
        ("delta", {"text": "", "blocks": BLOCKS[:2], "draft": []}),
        ("delta", {"text": "", "blocks": BLOCKS[2:], "draft": []}),
        ("answer", ANSWER),
    )
    route.fulfill(status=200, body=body, headers={"Content-Type": "text/event-stream"})


def test_the_log_is_busy_while_streaming_and_the_live_region_speaks_plain_text(
    reader: Reader,
) -> None:
    page = reader.page
    # Every value aria-busy takes on the log, however briefly.
    page.add_init_script(BUSY_RECORDER)
    page.route("**/api/ask", release)
    page.goto("/")
    reader.open_panel()
    log = page.get_by_role("log")
    expect(log).to_have_count(1)
    reader.ask(QUESTION)
    reader.wait_answer()
    expect(log).to_have_attribute("aria-busy", "false")
    assert page.evaluate("window.__busy") == ["true", "false"]

    live = page.locator("#docpilot [aria-live='polite']")
    spoken = live.text_content() or ""
    assert spoken == "OverviewSet exclude [1].exclude: [drafts/*]", spoken
    for markdown in ("#", "```", "`", "|"):
        assert markdown not in spoken
    # The accessibility tree of the answer: a heading, the text, the code, the sources.
    tree = log.aria_snapshot()
    assert 'heading "Overview"' in tree, tree
    assert 'link "Plugin configuration › exclude"' in tree, tree
    assert "exclude: [drafts/*]" in tree, tree


def test_tab_from_the_question_reaches_citations_actions_and_feedback_in_order(
    reader: Reader,
) -> None:
    page = reader.page
    # The floating panel: docked (1,220 px and wider) the launcher steps aside, and Tab
    # goes from the panel's last control back to the page.
    page.set_viewport_size({"width": 1100, "height": 720})
    page.route("**/api/ask", release)
    page.goto("/")
    reader.open_panel()
    reader.ask(QUESTION)
    reader.wait_answer()
    page.locator(".dp-input").focus()

    names = []
    for _ in range(12):
        page.keyboard.press("Tab")
        names.append(
            page.evaluate(
                "(() => { const e = document.activeElement;"
                " return e.closest('#dp-panel') ? (e.getAttribute('aria-label') || e.textContent)"
                " : e.closest('.dp-launcher') ? 'launcher' : 'page'; })()"
            )
        )
        if names[-1] in ("launcher", "page"):
            break
    assert names[0] == "Send", names
    order = [
        "1: Plugin configuration › exclude",  # the marker in the text
        "Plugin configuration › exclude",  # the source below the answer
        "Copy answer",
        "Retry",
        "Helpful",
        "Not helpful",
        "launcher",
    ]
    assert [n for n in names if n in order] == order, names

    page.keyboard.press("Shift+Tab")  # back into the panel
    page.keyboard.press("Escape")
    expect(page.locator("#dp-panel")).to_be_hidden()
    expect(page.locator(".dp-launcher")).to_be_focused()
