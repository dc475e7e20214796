"""The widget for keyboard and screen-reader users: a log that is busy while it streams,
a live region that speaks plain text, a Tab order from the question into the answer, and
focus back on the launcher when the panel closes."""

from __future__ import annotations

from pathlib import Path

from browsing import CONTRAST, Reader, result, sse
from playwright.sync_api import Page, Route, expect

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


# ---------------------------------------------------------------- a long answer: axe, contrast

AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"
SECOND = {
    "n": 2,
    "id": "/reference/cli/#index",
    "url": "/reference/cli/#index",
    "title": "docpilot index",
    "page_title": "CLI",
    "excerpt": "Index a site built by another generator.",
}
LONG = result(
    markdown=(
        "## Overview\n\nSet `exclude` in the plugin's options [1].\n\n"
        "### Patterns\n\n- `drafts/*` leaves out drafts [1]\n- `private/**` leaves out a"
        " folder [2]\n\n```yaml\nplugins:\n  - docpilot:\n      exclude: [drafts/*]\n```\n\n"
        "See the [CLI](/reference/cli/) for `docpilot index` [2].\n\n"
        "## Checking\n\n1. Build the site.\n2. Ask about a draft page [1]."
    ),
    citations=[CITATION, SECOND],
)
# Text a reader must be able to read inside the panel, by what it is.
LEGIBLE = {
    "link in the answer": ".dp-body a:not(.dp-cite)",
    "citation digit": ".dp-body a.dp-cite",
    "source link": ".dp-cites li a",
    "source number": ".dp-cites .dp-n",
    "'Sources'": ".dp-a > .dp-label",
    "privacy hint": ".dp-foot > span:first-child",
    "counter": ".dp-count",
    "AI label": ".dp-ai",
}


def axe_violations(page: Page) -> list[str]:
    """axe-core's violations on the whole page (so page-wide rules such as heading-order
    and duplicate landmarks see the widget in its page) at the widget's own elements, as
    "rule: element" lines. The theme's own findings are not the widget's to fix."""
    page.evaluate(AXE.read_text(encoding="utf-8"))
    return page.evaluate(
        """async () => (await axe.run(document, {resultTypes: ["violations"], elementRef: true}))
        .violations.flatMap((v) => v.nodes
          .filter((n) => n.element?.closest("#docpilot, .dp-skip, .dp-search"))
          .map((n) => `${v.id}: ${n.target.join(" ")}`))"""
    )


def show_long_answer(reader: Reader) -> Page:
    page = reader.page
    page.route(
        "**/api/ask",
        lambda route: route.fulfill(
            status=200, body=sse(("answer", LONG)), headers={"Content-Type": "text/event-stream"}
        ),
    )
    page.goto("/")
    reader.open_panel()
    reader.ask(QUESTION)
    reader.wait_answer()
    return page


def test_a_long_answer_leaves_axe_nothing_to_report_in_light_and_dark(reader: Reader) -> None:
    page = show_long_answer(reader)
    # The answer's ## and ### sit under the panel's h2 as h3 and h4, with no level skipped.
    levels = page.locator(".dp-body :is(h1, h2, h3, h4, h5, h6)").evaluate_all(
        "(hs) => hs.map((h) => h.tagName)"
    )
    assert levels == ["H3", "H4", "H3"], levels
    found = axe_violations(page)
    assert found == [], "\n".join(found)
    page.locator("label[title='Switch to dark mode']").first.click()
    expect(page.locator("body")).to_have_attribute("data-md-color-scheme", "slate")
    found = axe_violations(page)
    assert found == [], "\n".join(found)


def test_text_in_the_panel_meets_wcag_aa_contrast_in_light_and_dark(reader: Reader) -> None:
    page = show_long_answer(reader)
    for palette in ("light", "dark"):
        if palette == "dark":
            page.locator("label[title='Switch to dark mode']").first.click()
            expect(page.locator("body")).to_have_attribute("data-md-color-scheme", "slate")
        ratios = {}
        for what, selector in LEGIBLE.items():
            node = page.locator(f"#dp-panel {selector}").first
            expect(node).to_be_visible()
            ratios[what] = round(node.evaluate(CONTRAST), 2)
        low = {what: ratio for what, ratio in ratios.items() if ratio < 4.5}
        assert not low, f"below 4.5:1 in the {palette} palette: {low} (all: {ratios})"
        reader.screenshot(f"long-answer-{palette}")


def test_the_launcher_says_what_it_does_now_and_a_skip_link_reaches_it(reader: Reader) -> None:
    page = reader.page
    page.goto("/")
    launcher = page.locator(".dp-launcher")
    expect(launcher).to_have_attribute("aria-label", "Ask the docs (Press A to open)")
    # From the top of the page: Material's "Skip to content", then ours.
    stops = []
    while len(stops) < 3 and stops[-1:] != ["dp-skip"]:
        page.keyboard.press("Tab")
        stops.append(page.evaluate("document.activeElement.classList[0]"))
    assert stops[-1] == "dp-skip", stops
    skip = page.locator("a.dp-skip")
    expect(skip).to_be_visible()
    expect(skip).to_have_text("Ask the docs (A)")
    page.keyboard.press("Enter")
    expect(page.locator("#dp-panel")).to_be_visible()
    expect(page.locator(".dp-input")).to_be_focused()
    expect(launcher).to_have_attribute("aria-label", "Close: Ask the docs")
    page.keyboard.press("Escape")
    expect(launcher).to_have_attribute("aria-label", "Ask the docs (Press A to open)")
