"""Hostile or broken markup degrades to text, through the validator and the widget in
Chromium: every generated hostile answer (hostile_answers.py), validated in Python and
drawn by the widget's renderer on a page with no Content Security Policy to save it,
leaves no live link outside the page set and the excerpts' URLs, runs no script, creates
no element but the contract's, and shows no text outside code that reads as a tag."""

from __future__ import annotations

from typing import Any

from hostile_answers import TAG_TEXT, hostile_answers
from markdown_contract import EXCERPT_URLS, PAGES, validate
from playwright.sync_api import Page

# The elements the widget may draw for a tree (answer headings shifted down two levels).
DRAWN = "P H3 H4 H5 H6 BLOCKQUOTE UL OL LI PRE CODE EM STRONG DEL A BR HR TABLE THEAD TBODY TR TH TD"

DRAW_ALL = """
async ([trees, drawn, pages, excerpts, tagText]) => {
  // Any script that runs calls one of these (every payload's script is alert(1)).
  let ran = 0;
  window.alert = window.confirm = window.prompt = () => { ran += 1; };
  const box = document.body.appendChild(document.createElement("div"));
  for (const blocks of trees) box.append(window.renderTree(blocks, { cite: () => null }));
  // Two frames: an error or load handler queued by drawing would have run by then.
  for (let i = 0; i < 2; i++) await new Promise((done) => requestAnimationFrame(done));
  const boxes = ["highlight", "md-typeset__scrollwrap", "md-typeset__table"];
  const allowed = (e) => drawn.includes(e.tagName) || (e.tagName === "DIV" && boxes.includes(e.className))
    || (e.tagName === "INPUT" && e.type === "checkbox" && e.disabled);
  const strange = [...box.querySelectorAll("*")].filter((e) => !allowed(e)).map((e) => e.outerHTML);
  const handlers = [...box.querySelectorAll("*")].flatMap((e) => [...e.attributes])
    .map((a) => a.name).filter((n) => n.startsWith("on"));
  const live = [...box.querySelectorAll("a")].map((a) => a.href).filter((href) => {
    if (excerpts.some((url) => href.startsWith(url))) return false;
    const url = new URL(href);
    if (url.origin !== location.origin) return true;
    const ids = pages[url.pathname];
    return !ids || (url.hash && !ids.includes(decodeURIComponent(url.hash.slice(1))));
  });
  // The text outside code, run by run (a run ends at code and at a block's edge).
  const runs = [""];
  const walk = (node) => {
    for (const child of node.childNodes) {
      if (child.nodeType === Node.TEXT_NODE) runs[runs.length - 1] += child.data;
      else if (child.tagName === "BR") runs[runs.length - 1] += "\\n";
      else if (/^(EM|STRONG|DEL|A)$/.test(child.tagName)) walk(child);
      else {
        runs.push("");
        if (!/^(CODE|PRE)$/.test(child.tagName)) walk(child);
        runs.push("");
      }
    }
  };
  walk(box);
  const tags = runs.flatMap((run) => run.match(new RegExp(tagText, "g")) || []);
  return { ran, strange, handlers, live, tags, links: box.querySelectorAll("a").length };
}
"""


def test_hostile_answers_degrade_to_text_in_the_widget(renderer: Page) -> None:
    answers = hostile_answers()
    assert len(answers) >= 200
    trees = [validate(answer.markdown).blocks for answer in answers]
    pages = {page.url: sorted(page.ids) for page in PAGES}
    outcome: dict[str, Any] = renderer.evaluate(
        DRAW_ALL, [trees, DRAWN.split(), pages, EXCERPT_URLS, TAG_TEXT.pattern]
    )
    assert outcome["ran"] == 0, "no script ran"
    assert outcome["strange"] == [] and outcome["handlers"] == []
    assert outcome["live"] == [], "no live link outside the page set and the excerpts' URLs"
    assert outcome["tags"] == [], "no text outside code reads as a tag"
    # The allowed links survived: the test would notice a widget that drew none.
    assert outcome["links"] > 0
