"""Index text repeated across pages once: on the first page, in reading order, that has it.

Sites repeat whole blocks (a shared snippet, a summary copied onto an overview page);
indexed on every page, one question would get several identical citations. A block
(a paragraph, list, table or fenced code block of a unit's text) of at least
``MIN_REPEAT_CHARS`` characters that already appeared on an earlier page is left out
of later pages' units; a unit left with no text is dropped. Shorter blocks ("See also
the FAQ.") are ordinary prose and stay wherever they are.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import replace

from docpilot_runtime.index.units import Unit

MIN_REPEAT_CHARS = 200


def text_blocks(text: str) -> list[str]:
    """A unit's text cut at blank lines, never inside a fenced code block."""
    blocks: list[str] = []
    current: list[str] = []
    fence = ""
    for line in text.split("\n"):
        stripped = line.lstrip()
        if fence:
            current.append(line)
            if stripped.startswith(fence) and not stripped[len(fence) :].strip():
                fence = ""
            continue
        if stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
        if not line.strip() and not fence:
            if current:
                blocks.append("\n".join(current))
                current = []
            continue
        current.append(line)
    if current:
        blocks.append("\n".join(current))
    return blocks


def _page_url(unit: Unit) -> str:
    return unit.url.partition("#")[0]


def index_repeats_once(units: Sequence[Unit], order: Mapping[str, int]) -> list[Unit]:
    """``units`` without the long blocks an earlier page already carries.

    ``order`` ranks page urls in reading order (the site's nav); pages it does not
    rank come after those it does, in the order ``units`` lists them. The result keeps
    ``units``' order.
    """
    pages = list(dict.fromkeys(_page_url(u) for u in units))
    last = len(order)
    rank = {url: (order.get(url, last), i) for i, url in enumerate(pages)}
    owner: dict[bytes, str] = {}  # block hash -> the first page (in reading order) with it
    for unit in sorted(units, key=lambda u: rank[_page_url(u)]):
        for block in text_blocks(unit.text):
            if len(block) >= MIN_REPEAT_CHARS:
                owner.setdefault(hashlib.sha256(block.encode()).digest(), _page_url(unit))
    kept: list[Unit] = []
    for unit in units:
        page = _page_url(unit)
        blocks = text_blocks(unit.text)
        left = [
            b
            for b in blocks
            if len(b) < MIN_REPEAT_CHARS
            or owner[hashlib.sha256(b.encode()).digest()] == page
        ]
        if len(left) == len(blocks):
            kept.append(unit)
        elif left:
            kept.append(replace(unit, text="\n\n".join(left)))
    return kept
