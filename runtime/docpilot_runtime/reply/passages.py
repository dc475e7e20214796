"""The `passages` answer: the best excerpts, each cited, quoting the sentences most
relevant to the question. Used when no model is configured (or none answered).

Every excerpt it quotes ends with a citation marker; the one line of its own is the
framing before them, saying (in the reader's language) that these are quotes. It builds
the element tree the widget draws directly (docs text is never read as Markdown, so it
cannot make links) and serialises `markdown` from it.
Pure Python (the browser's static mode writes the same answer).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from docpilot_runtime.retrieve.tokenize import query_terms, tokenize
from docpilot_runtime.shared.fences import fenced_blocks, open_fence
from docpilot_runtime.shared.framing import ENGLISH, Framing
from docpilot_runtime.shared.markdown_tree import (
    Node,
    code_block,
    element,
    to_markdown,
    trusted_inline,
)

_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+")
MAX_SENTENCES = 2
MAX_CODE_CHARS = 600
MAX_SENTENCE_CHARS = 400
EXCERPT_CHARS = 200  # a citation's preview of its section


class Excerptable(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def text(self) -> str: ...


def _prose_and_code(text: str) -> tuple[list[str], list[str]]:
    lines = text.split("\n")
    code: list[str] = []
    fenced: set[int] = set()
    for found in fenced_blocks(lines):
        if found.end is None:
            continue
        code.append("\n".join(lines[found.start : found.end + 1]))
        fenced.update(range(found.start, found.end + 1))
    prose = "\n".join("" if i in fenced else line for i, line in enumerate(lines))
    sentences: list[str] = []
    for block in re.split(r"\n\s*\n", prose):
        lines = [line.strip() for line in block.splitlines() if line.strip()]
        if not lines or lines[0].startswith("|"):
            continue
        # A list item starts a part of its own; other lines continue the current one.
        parts: list[str] = []
        for line in lines:
            if line.startswith("- ") or not parts:
                parts.append(line[2:] if line.startswith("- ") else line)
            else:
                parts[-1] += " " + line
        for part in parts:
            sentences.extend(s.strip() for s in _SENTENCE.split(part) if s.strip())
    return sentences, code


def _overlap(terms: set[str], text: str) -> int:
    return len(terms & set(tokenize(text)))


def excerpt(question: str, text: str) -> str:
    """The sentences of ``text`` that share most terms with the question (in their
    original order), plus its first code block when the code shares terms too."""
    terms = set(query_terms(question))
    sentences, code = _prose_and_code(text)
    scored = sorted(range(len(sentences)), key=lambda i: (-_overlap(terms, sentences[i]), i))[
        :MAX_SENTENCES
    ]
    chosen = [sentences[i][:MAX_SENTENCE_CHARS] for i in sorted(scored)]
    parts = [" ".join(chosen)] if chosen else []
    if code and (not chosen or _overlap(terms, code[0]) > 0):
        block = code[0]
        if len(block) <= MAX_CODE_CHARS:
            parts.append(block)
    return "\n\n".join(p for p in parts if p)


def _fenced(part: str) -> bool:
    return open_fence(part.split("\n", 1)[0]) is not None


def _code_node(fenced: str) -> Node:
    lines = fenced.split("\n")
    opened = open_fence(lines[0])
    return code_block("\n".join(lines[1:-1]), opened.language if opened else "")


def page_title_of(title: str, breadcrumb: Sequence[str]) -> str:
    """A section's page title: the breadcrumb starts with it; a page's own top section
    has no breadcrumb and is titled as the page."""
    return breadcrumb[0] if breadcrumb else title


def preview(text: str, limit: int = EXCERPT_CHARS) -> str:
    """A section's opening words on one line, cut at a word within ``limit`` characters:
    what a reader sees before following a citation (code fences dropped)."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith(("```", "~~~"))]
    flat = " ".join(" ".join(lines).split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip(" ,;:") + "…"


def source_label(unit: Excerptable) -> str:
    """ "Page › Section" (just the title for a page's own top section)."""
    page = page_title_of(unit.title, getattr(unit, "breadcrumb", ()))
    return unit.title if page == unit.title else f"{page} › {unit.title}"


def passages_blocks(
    question: str, units: Sequence[Excerptable], framing: Framing = ENGLISH
) -> list[Node]:
    """The framing line, then one cited excerpt per unit, numbered in order, each quoted
    as the docs' own words (a blockquote): **Page › Section**: text [n], then its code
    block, if any."""
    blocks: list[Node] = [element("p", framing.passages)] if units else []
    for n, unit in enumerate(units, start=1):
        body = excerpt(question, unit.text) or unit.text[:MAX_SENTENCE_CHARS]
        head, _, code = body.partition("\n\n")
        is_code = _fenced(head)
        lead: list[Node] = [element("strong", source_label(unit))]
        if not is_code:
            lead += [": ", *trusted_inline(" ".join(head.split()))]
        quoted: list[Node] = [element("p", *lead, " ", element("cite", n=n))]
        for part in (head if is_code else "", code):
            if part and _fenced(part):
                quoted.append(_code_node(part))
        blocks.append(element("blockquote", *quoted))
    return blocks


def passages_markdown(
    question: str, units: Sequence[Excerptable], framing: Framing = ENGLISH
) -> str:
    """The passages answer as Markdown (serialised from `passages_blocks`)."""
    return to_markdown(passages_blocks(question, units, framing))
