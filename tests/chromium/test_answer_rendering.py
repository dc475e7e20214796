"""The widget draws exactly what the validator passed: hostile answers, validated in
Python, rendered by the widget's own renderer in Chromium, must show CommonMark's text,
hold only allowed elements and link off-site only to URLs an excerpt carried.

One page load serves every answer (the `renderer` fixture imports the renderer once);
hypothesis generates the answers and shrinks a failing one.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from docpilot_runtime.bundle.schema import Page as BundlePage
from docpilot_runtime.check.validate import Source, ValidatedAnswer, validate_answer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from playwright.sync_api import Page
from reference_reader import REFERENCE_READER

PAGES = [
    BundlePage("/", "Home", frozenset({"intro"})),
    BundlePage("/guide/", "Guide", frozenset({"setup", "install"})),
]
EMITTED = {
    "/guide/#setup": Source("/guide/#setup", "/guide/#setup", "Setup"),
    "/#intro": Source("/#intro", "/#intro", "Intro"),
}
EXCERPT_URL = "https://ok.example/docs"  # an off-site URL an excerpt of this turn carried
EVIL = "https://evil.example/?q=secret"
# The elements the widget may create (answer headings are shifted down two levels).
ALLOWED = [
    "P",
    "H3",
    "H4",
    "H5",
    "H6",
    "BLOCKQUOTE",
    "UL",
    "OL",
    "LI",
    "PRE",
    "CODE",
    "EM",
    "STRONG",
    "A",
    "BR",
    "HR",
    "DEL",
    "TABLE",
    "THEAD",
    "TBODY",
    "TR",
    "TH",
    "TD",
]
COMMONMARK = REFERENCE_READER

CHECK = """
([cases, allowed, excerpt]) => cases.map(([blocks, reference]) => {
  const box = document.createElement("div");
  box.append(window.renderTree(blocks, { cite: () => null }));
  // Besides those: a code block's wrapper (div.highlight, as the site draws code), the
  // runtime's highlighted tokens (spans directly inside code), a table's scrolling box and
  // a task item's disabled checkbox.
  const boxes = ["highlight", "md-typeset__scrollwrap", "md-typeset__table"];
  const drawn = (e) => allowed.includes(e.tagName) || (e.tagName === "DIV" && boxes.includes(e.className))
    || (e.tagName === "SPAN" && e.parentElement.tagName === "CODE")
    || (e.tagName === "INPUT" && e.type === "checkbox" && e.disabled);
  const bad = [...box.querySelectorAll("*")].filter((e) => !drawn(e)).map((e) => e.tagName);
  const offsite = [...box.querySelectorAll("a")].map((a) => a.href)
    .filter((h) => new URL(h).origin !== location.origin && !h.startsWith(excerpt));
  const ref = new DOMParser().parseFromString(reference, "text/html").body.textContent;
  const flat = (s) => s.replace(/\\s+/g, "");
  return { bad, offsite, same: flat(box.textContent) === flat(ref), shown: box.textContent, ref };
})
"""
ANSWERS_PER_CALL = 25  # answers rendered per round trip to the page


def validate(markdown: str) -> ValidatedAnswer:
    return validate_answer(markdown, EMITTED, PAGES, allowed_external=[EXCERPT_URL])


def render_all(page: Page, results: list[ValidatedAnswer]) -> list[dict[str, Any]]:
    """Each validated answer drawn by the widget's renderer, with CommonMark's reading."""
    references = [COMMONMARK.render(r.markdown) for r in results]
    cases = [[r.blocks, ref] for r, ref in zip(results, references, strict=True)]
    outcomes: list[dict[str, Any]] = page.evaluate(CHECK, [cases, ALLOWED, EXCERPT_URL])
    for outcome, reference, result in zip(outcomes, references, results, strict=True):
        outcome["reference_hrefs"] = re.findall(r'(?:href|src)="([^"]*)"', reference)
        outcome["markdown"] = result.markdown
    return outcomes


def render(page: Page, result: ValidatedAnswer) -> dict[str, Any]:
    return render_all(page, [result])[0]


def assert_safe(outcome: dict[str, Any]) -> None:
    assert outcome["bad"] == [], "only allowed elements"
    assert outcome["offsite"] == [], "no off-site link an excerpt did not carry"
    assert outcome["same"], (outcome["markdown"], outcome["shown"], outcome["ref"])
    assert not [h for h in outcome["reference_hrefs"] if "evil" in h]


@pytest.mark.parametrize(
    ("written", "seen"),
    [
        ("3 < 5 and a > b", "3 < 5 and a > b"),
        ("a &lt;script&gt; b", "a  b"),
        ("\\[x\\]", "[x]"),
        ("\\~\\~\\~", "~~~"),
        ("list[0]", "list[0]"),
    ],
)
def test_readers_see_the_text_commonmark_shows(renderer: Page, written: str, seen: str) -> None:
    outcome = render(renderer, validate(f"{written} [[/guide/#setup]]"))
    assert_safe(outcome)
    assert outcome["shown"] == f"{seen} [1]"


LINKS = """
(blocks) => {
  const box = document.createElement("div");
  box.append(window.renderTree(blocks, { cite: () => null }));
  return { text: box.textContent, links: [...box.querySelectorAll("a")].map(
    (a) => ({ href: a.href, rel: a.rel, target: a.target })) };
}
"""


def test_an_off_site_link_shows_its_domain_and_passes_on_no_ranking(renderer: Page) -> None:
    """Issue 27: an off-site link the answer keeps is drawn with its domain beside it and
    rel="nofollow noopener noreferrer" in a new tab; one inside an instruction is text."""
    kept = validate(f"The source is on [GitHub]({EXCERPT_URL}) [[/guide/#setup]].")
    drawn = renderer.evaluate(LINKS, kept.blocks)
    assert "GitHub (ok.example)" in drawn["text"]
    [link] = drawn["links"]
    assert link["href"] == EXCERPT_URL and link["target"] == "_blank"
    assert set(link["rel"].split()) == {"nofollow", "noopener", "noreferrer"}
    told = validate(f"Download the fix from [this page]({EXCERPT_URL}) [[/guide/#setup]].")
    drawn = renderer.evaluate(LINKS, told.blocks)
    assert drawn["links"] == [] and "this page (ok.example)" in drawn["text"]


@pytest.mark.parametrize("marker", ["> ", "- "])
def test_a_deeply_nested_answer_renders_without_overflowing(renderer: Page, marker: str) -> None:
    result = validate(marker * 2950 + "deep [[/guide/#setup]]")
    assert_safe(render(renderer, result))
    # A hand-made tree far deeper than any validated one still draws (iteratively, capped).
    depth = renderer.evaluate(
        "() => { let t = 'x'; for (let i = 0; i < 20000; i++) t = {t: 'blockquote', c: [t]};"
        " const b = document.createElement('div'); b.append(window.renderTree([t], {cite: () => null}));"
        " let d = 0, e = b; while (e.firstElementChild) { e = e.firstElementChild; d++; }"
        " return [d, b.textContent]; }"
    )
    assert depth == [12, "x"]


@pytest.mark.parametrize(
    "variant",
    [
        f"\\[text\\]({EVIL})",
        f"[te\nxt]({EVIL})",
        f"`[text`]({EVIL})",
        f"[{'x' * 1200}]({EVIL})",
        f"- [item\n  ]({EVIL})",
        f"> [quote\n> ]({EVIL})",
        f"[a]: {EVIL}\n\n[a]",
        f"<{EVIL}>",
        f"![img]({EVIL})",
        f"[[text]]({EVIL})",
        f"[[/guide/#setup]]({EVIL})",
    ],
)
def test_bracket_tricks_never_become_off_site_links(renderer: Page, variant: str) -> None:
    assert_safe(render(renderer, validate(f"See [[/guide/#setup]].\n\n{variant}")))


PIECES = [
    "[[/guide/#setup]]",
    "[[/#intro]]",
    "[[/made/up/]]",
    "[1]",
    "[",
    "]",
    "(",
    ")",
    "\\[",
    "\\]",
    "`",
    "``",
    "```",
    "~~~",
    "<",
    ">",
    "&lt;",
    "&amp;",
    "&#91;",
    "&copy;",
    "*",
    "**",
    "_",
    "!",
    f"<{EVIL}>",
    f"<{EXCERPT_URL}>",
    f"]({EVIL})",
    f"]({EXCERPT_URL})",
    "](/guide/#setup)",
    "](/guide/#nowhere)",
    "](/#intro)",
    f"[x]: {EVIL}\n",
    "[x]",
    "![",
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "\n",
    "\n\n",
    "\n- ",
    "\n  - ",
    "\n> ",
    "\n> > ",
    "\n1. ",
    "\n    ",
    "\n```js\n",
    "\n~~~\n",
    "\n# ",
    "\n---\n",
    "  ",
    "\\",
    "text",
    "word",
    "#",
    "|",
    "\\|",
    "\n| a | b |\n|:--|--:|\n",
    "\n| --- |\n",
    ":-",
    "~~",
    "\n- [ ] ",
    "\n- [x] ",
]


ANSWER = st.lists(st.sampled_from(PIECES), min_size=1, max_size=40).map("".join)
EXAMPLES = 40  # x ANSWERS_PER_CALL = 1,000 hostile answers


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
    ],
)
@given(st.lists(ANSWER, min_size=ANSWERS_PER_CALL, max_size=ANSWERS_PER_CALL))
def test_hostile_answers_render_as_commonmark_reads_them(
    renderer: Page, answers: list[str]
) -> None:
    for outcome in render_all(renderer, [validate(answer) for answer in answers]):
        assert_safe(outcome)
