"""The `passages` answer: the best excerpts, each cited, quoting the sentence most
relevant to the question with its best neighbour (`sentences`). Used when no model is
configured (or none answered).

Every excerpt it quotes ends with a citation marker; the one line of its own is the
framing before them, saying (in the reader's language) that these are quotes. It builds
the element tree the widget draws directly (docs text is never read as Markdown, so it
cannot make links) and serialises `markdown` from it. A section's table (pipe rows in
the unit text, as the indexer writes tables) is quoted as a table: its header and the
rows that share most of the question's words.
Pure Python (the browser's static mode writes the same answer).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from docpilot_runtime.reply.sentences import overlap, quoted_sentences, split_sentences
from docpilot_runtime.retrieve.tokenize import FUNCTION_WORDS, query_terms
from docpilot_runtime.shared.fences import fenced_blocks, open_fence
from docpilot_runtime.shared.framing import ENGLISH, Framing
from docpilot_runtime.shared.markdown_tree import (
    Node,
    code_block,
    element,
    to_markdown,
    trusted_inline,
)

MAX_CODE_CHARS = 600
MAX_SENTENCE_CHARS = 400
EXCERPT_CHARS = 200  # a citation's preview of its section
MAX_TABLE_ROWS = 4  # body rows of a quoted table: those that match the question best
MAX_CELL_CHARS = 200
_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_DELIMITER_CELL = re.compile(r":?-+:?")


class Excerptable(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def text(self) -> str: ...


Table = list[list[str]]  # rows of cell texts, the header row first


def _cells(row: str) -> list[str]:
    """A pipe row's cells: split at unescaped pipes, ``\\|`` back to a pipe."""
    inner = row.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [cell.strip().replace("\\|", "|") for cell in _CELL_SPLIT.split(inner)]


def _table(lines: list[str]) -> Table:
    rows = [_cells(line) for line in lines]
    return [row for row in rows if not all(_DELIMITER_CELL.fullmatch(c) for c in row)]


def _prose_and_code(text: str) -> tuple[list[list[str]], list[str], list[Table]]:
    """The sentences of each paragraph and list item, the fenced code blocks and the
    tables of a unit's text."""
    lines = text.split("\n")
    code: list[str] = []
    fenced: set[int] = set()
    for found in fenced_blocks(lines):
        if found.end is None:
            continue
        code.append("\n".join(lines[found.start : found.end + 1]))
        fenced.update(range(found.start, found.end + 1))
    prose = "\n".join("" if i in fenced else line for i, line in enumerate(lines))
    sentences: list[list[str]] = []
    tables: list[Table] = []
    for block in re.split(r"\n\s*\n", prose):
        lines = [line.strip() for line in block.splitlines() if line.strip()]
        if not lines:
            continue
        if all(line.startswith("|") for line in lines):
            table = _table(lines)
            if table and table[0]:
                tables.append(table)
            continue
        # A list item starts a part of its own; other lines continue the current one.
        parts: list[str] = []
        for line in lines:
            if line.startswith("- ") or not parts:
                parts.append(line[2:] if line.startswith("- ") else line)
            else:
                parts[-1] += " " + line
        sentences.extend(split_sentences(part) for part in parts)
    return [block for block in sentences if block], code, tables


@dataclass(frozen=True)
class Excerpt:
    """What a passage quotes of a section: prose, a table (header first), a code block."""

    prose: str = ""
    table: Table = field(default_factory=list)
    code: str = ""  # fenced, as in the unit text


def _table_excerpt(terms: set[str], table: Table) -> Table:
    """The header and the body rows that share most terms with the question (the first
    rows when none shares any), at most MAX_TABLE_ROWS, in their order."""
    header, body = table[0], table[1:]
    overlaps = [overlap(terms, " ".join(row)) for row in body]
    best = max(overlaps, default=0)
    rows = [i for i, overlap in enumerate(overlaps) if overlap == best][:MAX_TABLE_ROWS]
    return [header, *(body[i] for i in rows)]


def excerpt_of(question: str, text: str) -> Excerpt:
    """The sentence of ``text`` that shares most terms with the question, with its best
    neighbour (`quoted_sentences`); its first table that shares terms with it (or the
    first table of a section without prose); and its first code block when the code
    shares terms too."""
    terms = set(query_terms(question)) - FUNCTION_WORDS  # "are" matches nothing
    sentences, code, tables = _prose_and_code(text)
    chosen = quoted_sentences(terms, sentences, MAX_SENTENCE_CHARS)
    table = next((t for t in tables if overlap(terms, " ".join(map(" ".join, t)))), None)
    if table is None and tables and not chosen:
        table = tables[0]
    block = ""
    if code and (not chosen or overlap(terms, code[0]) > 0) and len(code[0]) <= MAX_CODE_CHARS:
        block = code[0]
    return Excerpt(" ".join(chosen), _table_excerpt(terms, table) if table else [], block)


def excerpt(question: str, text: str) -> str:
    """`excerpt_of` as text: the prose, the table's pipe rows and the fenced code, each
    its own block."""
    found = excerpt_of(question, text)
    rows = ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in found.table]
    if rows:
        rows.insert(1, "|" + " --- |" * len(found.table[0]))
    return "\n\n".join(p for p in (found.prose, "\n".join(rows), found.code) if p)


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
    return cut_at_word(" ".join(" ".join(lines).split()), limit)


def cut_at_word(value: str, limit: int) -> str:
    """``value`` within ``limit`` characters, cut at a word and ended with "…" when cut."""
    if len(value) <= limit:
        return value
    cut = value[: limit - 1]
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
        found = excerpt_of(question, unit.text)
        prose = found.prose
        if not (prose or found.table or found.code):
            prose = unit.text[:MAX_SENTENCE_CHARS]
        lead: list[Node] = [element("strong", source_label(unit))]
        if prose:
            lead += [": ", *trusted_inline(" ".join(prose.split()))]
        quoted: list[Node] = [element("p", *lead, " ", element("cite", n=n))]
        if found.table:
            quoted.append(_table_node(found.table))
        if found.code and _fenced(found.code):
            quoted.append(_code_node(found.code))
        blocks.append(element("blockquote", *quoted))
    return blocks


def _table_node(table: Table) -> Node:
    """A docs table as the tree's table: cells read as the site's own text (code spans,
    bold), every row as wide as the header."""
    width = len(table[0])

    def row(cells: list[str], tag: str) -> Node:
        cells = (cells + [""] * width)[:width]
        shown = (trusted_inline(cut_at_word(c, MAX_CELL_CHARS)) for c in cells)
        return element("tr", *(element(tag, *inline) for inline in shown))

    parts = [element("thead", row(table[0], "th"))]
    if len(table) > 1:
        parts.append(element("tbody", *(row(cells, "td") for cells in table[1:])))
    return element("table", *parts)



def passages_markdown(
    question: str, units: Sequence[Excerptable], framing: Framing = ENGLISH
) -> str:
    """The passages answer as Markdown (serialised from `passages_blocks`)."""
    return to_markdown(passages_blocks(question, units, framing))
