"""Turn a parsed page into retrieval units: one per heading section.

A unit's ``url`` is the page url plus the anchor the renderer wrote on its heading,
so a citation always lands on a real anchor. Its ``id`` is that url, with ``~N``
(N = 2, 3, …) appended to the N-th unit sharing the url: the parts of a long
section, or a repeated anchor the renderer did not disambiguate.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from docpilot_runtime.index.html_sections import Block, ParsedPage
from docpilot_runtime.settings.index import DEFAULT_MAX_SECTION_CHARS

_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")


@dataclass(frozen=True)
class Unit:
    id: str
    url: str
    title: str
    breadcrumb: tuple[str, ...]  # page title > parent headings (not the unit's own title)
    text: str
    page: int  # index into the bundle's page list

    def embed_text(self) -> str:
        """What the embedder sees: the breadcrumb trail, then the section text.

        A section called "Limits" means something else under "Webhooks" than under
        "Billing"; the trail carries that difference into the vector.
        """
        trail = " > ".join(p for p in (*self.breadcrumb, self.title) if p)
        return f"{trail}\n\n{self.text}" if trail else self.text


def _split_long_block(block: Block, cap: int) -> list[Block]:
    """Cut one oversized block: code at line boundaries (each part re-fenced), prose at
    sentence ends, then at spaces."""
    if block.code:
        lines = block.text.split("\n")
        fence_open, body, fence_close = lines[0], lines[1:-1], lines[-1]
        room = max(cap - len(fence_open) - len(fence_close) - 2, 1)
        parts: list[Block] = []
        chunk: list[str] = []
        size = 0
        for line in body:
            if chunk and size + len(line) + 1 > room:
                parts.append(Block("\n".join([fence_open, *chunk, fence_close]), code=True))
                chunk, size = [], 0
            chunk.append(line)
            size += len(line) + 1
        if chunk:
            parts.append(Block("\n".join([fence_open, *chunk, fence_close]), code=True))
        return parts
    pieces = _SENTENCE_END.split(block.text)
    out: list[Block] = []
    current = ""
    for piece in pieces:
        while len(piece) > cap:  # one sentence longer than the cap: cut at a space
            cut = piece.rfind(" ", 0, cap)
            cut = cut if cut > cap // 2 else cap
            if current:
                out.append(Block(current))
                current = ""
            out.append(Block(piece[:cut].rstrip()))
            piece = piece[cut:].lstrip()
        candidate = f"{current} {piece}" if current else piece
        if len(candidate) > cap and current:
            out.append(Block(current))
            current = piece
        else:
            current = candidate
    if current:
        out.append(Block(current))
    return out


def split_blocks(blocks: list[Block], cap: int) -> list[str]:
    """Pack blocks into texts of at most ``cap`` characters, cutting only between
    blocks (paragraph boundaries); a block is cut only when it alone exceeds the cap."""
    pieces: list[Block] = []
    for block in blocks:
        pieces.extend(_split_long_block(block, cap) if len(block.text) > cap else [block])
    texts: list[str] = []
    current: list[str] = []
    size = 0
    for piece in pieces:
        extra = len(piece.text) + (2 if current else 0)
        if current and size + extra > cap:
            texts.append("".join(current))
            current, size = [], 0
            extra = len(piece.text)
        if current:
            # Consecutive list items stay one list; other blocks are paragraphs.
            both_items = current[-1].startswith("- ") and piece.text.startswith("- ")
            current.append("\n" if both_items else "\n\n")
        current.append(piece.text)
        size += extra
    if current:
        texts.append("".join(current))
    return texts


_WORD = re.compile(r"\w+")


def says_nothing(unit: Unit, page_title: str = "") -> bool:
    """Whether a unit's text only repeats its own headings (the title of a blog archive
    or category page once its posts' excerpts are left to the posts): nothing to cite."""
    headings = (unit.title, *unit.breadcrumb, page_title)
    heard = {w.lower() for t in headings for w in _WORD.findall(t)}
    return all(w.lower() in heard for w in _WORD.findall(unit.text))


def page_units(
    page: ParsedPage,
    page_url: str,
    page_index: int,
    max_chars: int = DEFAULT_MAX_SECTION_CHARS,
    note: Callable[[str], None] = lambda _msg: None,
    where: str = "",
) -> list[Unit]:
    """Units of one page, in document order. ``where`` names the page in ``note``
    messages (its source file); the page url stands in without it."""
    units: list[Unit] = []
    seen: dict[str, int] = {}
    trail: list[tuple[int, str]] = []  # (level, title) of the open headings
    last_anchor: str | None = None
    untitled: list[str] = []
    for section in page.sections:
        if section.level:
            while trail and trail[-1][0] >= section.level:
                trail.pop()
        title = section.title
        if section.level and not title:
            title = trail[-1][1] if trail else page.title
            untitled.append(f"#{section.anchor}" if section.anchor else "(no id)")
        if section.level <= 1:  # the page's own title section: the title is the trail
            breadcrumb: tuple[str, ...] = ()
            title = title or page.title
        else:
            parents = (t for level, t in trail if level >= 2)
            breadcrumb = tuple(t for t in (page.title, *parents) if t)
        if section.level:
            trail.append((section.level, title))
        if section.anchor:
            last_anchor = section.anchor
        anchor = section.anchor or last_anchor
        if all(block.links for block in section.blocks):  # none, or only links to pages
            continue
        url = f"{page_url}#{anchor}" if anchor else page_url
        for text in split_blocks(section.blocks, max_chars):
            n = seen.get(url, 0) + 1
            seen[url] = n
            units.append(
                Unit(
                    id=url if n == 1 else f"{url}~{n}",
                    url=url,
                    title=title,
                    breadcrumb=breadcrumb,
                    text=text,
                    page=page_index,
                )
            )
    if untitled:
        listed = ", ".join(untitled[:5]) + (", …" if len(untitled) > 5 else "")
        note(
            f"{where or page_url}: {len(untitled)} heading(s) with no text ({listed}); "
            "their sections take the parent's title"
        )
    return units
