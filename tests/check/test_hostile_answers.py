"""Hostile or broken markup degrades to text, in the validator: the generated hostile
answers (hostile_answers.py) ship trees with no link outside the page set and the
excerpts' URLs, no text outside code that reads as a tag, and every payload placed in
code shown there as written; a careless reader of the shipped Markdown (raw HTML on)
finds no markup in it either."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from urllib.parse import unquote, urlsplit

import pytest
from docpilot_runtime.shared.markdown_tree import Node, text_of
from hostile_answers import TAG_TEXT, hostile_answers
from markdown_contract import EXCERPT_URLS, PAGES, validate
from reference_reader import REFERENCE_READER

ANSWERS = hostile_answers()
# What a careless reader may draw from the shipped Markdown: the contract's own elements.
MARKUP = re.compile(
    r"</?(?:p|a|code|pre|em|strong|del|ul|ol|li|blockquote|h[1-6]|hr|br|table|thead|tbody|"
    r"tr|th|td|input)\b[^>]*>"
)
BLOCK_TAGS = {"code", "pre"}  # barriers inside a paragraph's text: code shows as written


def live_link_allowed(href: str) -> bool:
    if any(href.startswith(url) for url in EXCERPT_URLS):
        return True
    parts = urlsplit(href)
    if parts.scheme or parts.netloc:
        return False
    page = next((p for p in PAGES if p.url == parts.path), None)
    return page is not None and (not parts.fragment or unquote(parts.fragment) in page.ids)


def hrefs(nodes: Sequence[Node]) -> Iterator[str]:
    for node in nodes:
        if isinstance(node, dict):
            if node["t"] == "a":
                yield node["href"]
            yield from hrefs(node.get("c", []))


def runs(nodes: Sequence[Node]) -> list[str]:
    """The text a reader sees outside code, run by run: a run ends at code and at a
    block's edge (citations read as "[n]", line breaks as newlines)."""
    barrier = "\x00"

    def flat(nodes: Sequence[Node]) -> Iterator[str]:
        for node in nodes:
            if isinstance(node, str) or node["t"] in ("cite", "br"):
                yield text_of([node])
            elif node["t"] in ("em", "strong", "del", "a"):
                yield from flat(node["c"])
            else:
                yield barrier
                if node["t"] not in BLOCK_TAGS:
                    yield from flat(node.get("c", []))
                yield barrier

    return "".join(flat(nodes)).split(barrier)


def codes(nodes: Sequence[Node]) -> Iterator[str]:
    for node in nodes:
        if isinstance(node, dict):
            if node["t"] in ("code", "pre"):
                yield text_of(node["c"])
            else:
                yield from codes(node.get("c", []))


def test_the_fixture_is_large_and_every_answer_is_shown() -> None:
    assert len(ANSWERS) >= 200
    assert all(validate(a.markdown).citations for a in ANSWERS)


@pytest.mark.parametrize("index", range(len(ANSWERS)))
def test_hostile_markup_degrades_to_text(index: int) -> None:
    answer = ANSWERS[index]
    shipped = validate(answer.markdown)
    assert [h for h in hrefs(shipped.blocks) if not live_link_allowed(h)] == []
    tags = [m for run in runs(shipped.blocks) for m in TAG_TEXT.findall(run)]
    assert tags == [], answer.markdown
    shown_code = list(codes(shipped.blocks))
    for payload in answer.in_code:
        assert any(c.strip("\n") in (payload, payload.replace("\n", " ")) for c in shown_code), payload
    careless = REFERENCE_READER.render(shipped.markdown)
    assert [t for t in re.findall(r"<[^>]*>", careless) if not MARKUP.fullmatch(t)] == []
    assert all(live_link_allowed(h) for h in re.findall(r'href="([^"]*)"', careless))
