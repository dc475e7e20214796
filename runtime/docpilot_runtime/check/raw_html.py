"""Raw HTML in a model's text: what a reader sees of it is its text content, or nothing.

The validator reads raw HTML as HTML (markdown-it-py with ``html`` on), so it knows what
is markup: an inline tag is dropped and the text around and inside it stays (``<b>x</b>``
shows ``x``; ``<img onerror=…>`` shows nothing); an HTML block becomes a paragraph of its
text content (`text_content`: the text data, entities decoded, comments, declarations and
processing instructions left out). A tag also never prints as text: text outside code
that reads as one, however it was written (with entities, ``&lt;b&gt;``, or escaped,
``\\<b>``), is removed from the tree (`drop_tag_text`), so the widget never shows markup
it did not draw. Inside code spans and code blocks markup is code and shows as written.

Standard library and markdown-it-py's own tag grammar.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from html.parser import HTMLParser
from typing import Any

from markdown_it.common.html_re import HTML_TAG_RE

from docpilot_runtime.shared.markdown_tree import Node

# What reads as a tag: CommonMark's grammar (tags, comments, processing instructions,
# declarations, CDATA), what a browser would take for one (a "<", a letter, anything but
# angle brackets, ">": "<svg/onload=x>"), and any complete comment.
TAG_TEXT = re.compile(f"{HTML_TAG_RE.pattern}|</?[A-Za-z][^<>]*>|<!--[\\s\\S]*?-->")
# Removing a tag can join the text around it into another ("<<b>b>"): removal repeats,
# at most this many rounds; after them every "<" of the run goes, so none can be left.
_ROUNDS = 20
# Elements whose text flows on through them; any other element ends a run of text.
_TRANSPARENT = ("em", "strong", "del", "a")
_CODE = ("code", "pre")
_PRIVATE_USE = range(0xE000, 0xF900)


class _TextContent(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)

    def _reference(self, written: str) -> None:
        decoded = html.unescape(written)
        # The validator's own placeholders are private-use characters: none may be forged.
        self.parts.append("".join(c for c in decoded if ord(c) not in _PRIVATE_USE))

    def handle_entityref(self, name: str) -> None:
        self._reference(f"&{name};")

    def handle_charref(self, name: str) -> None:
        self._reference(f"&#{name};")

    def parse_marked_section(self, i: int, report: bool = True) -> int:
        """``<![`` in HTML content is, for a browser, a comment up to the next ``>`` (to
        the end of the fragment, which `text_content` reads whole, when none follows).
        The standard library reads it as an SGML marked section and raises
        AssertionError on a name it does not know, or none (``<![ x``)."""
        try:
            return super().parse_marked_section(i, report)
        except AssertionError:
            end = self.rawdata.find(">", i + 3)
            return len(self.rawdata) if end < 0 else end + 1


def text_content(markup: str) -> str:
    """The text an HTML fragment holds, lines trimmed, blank lines dropped."""
    reader = _TextContent()
    reader.feed(markup)
    reader.close()
    lines = (line.strip() for line in "".join(reader.parts).split("\n"))
    return "\n".join(line for line in lines if line)


class _Leaf:
    """A piece of a run: a text node, or a citation or line break (what they show)."""

    def __init__(self, siblings: list[Node], index: int) -> None:
        self.siblings, self.index = siblings, index
        node = siblings[index]
        self.shown = node if isinstance(node, str) else _shown(node)

    def keep(self, kept: str) -> None:
        """Keep only ``kept`` of what this leaf shows (a citation or a break is whole or
        gone: a tag starts and ends in text, so it holds them whole)."""
        if isinstance(self.siblings[self.index], str):
            self.siblings[self.index] = kept
            self.shown = kept
        else:
            self.siblings[self.index] = ""
            self.shown = ""


def _shown(node: dict[str, Any]) -> str:
    return f"[{node.get('n')}]" if node.get("t") == "cite" else "\n"


def _runs(nodes: list[Node], runs: list[list[_Leaf]]) -> None:
    """Split the inline text under ``nodes`` into runs: code and blocks end a run."""
    for index, node in enumerate(nodes):
        if isinstance(node, str) or node.get("t") in ("cite", "br"):
            runs[-1].append(_Leaf(nodes, index))
        elif node.get("t") in _TRANSPARENT:
            _runs(node.get("c", []), runs)
        else:
            runs.append([])
            if node.get("t") not in _CODE:
                _runs(node.get("c", []), runs)
                runs.append([])


def _strip(run: list[_Leaf]) -> None:
    for round_ in range(_ROUNDS + 1):
        joined = "".join(leaf.shown for leaf in run)
        if round_ == _ROUNDS:
            spans = [(i, i + 1) for i, c in enumerate(joined) if c == "<"]
        else:
            spans = [m.span() for m in TAG_TEXT.finditer(joined)]
        if not spans:
            return
        gone = bytearray(len(joined))
        for start, end in spans:
            gone[start:end] = b"\x01" * (end - start)
        at = 0
        for leaf in run:
            size = len(leaf.shown)
            kept = "".join(c for i, c in enumerate(leaf.shown) if not gone[at + i])
            at += size
            if kept != leaf.shown:
                leaf.keep(kept)


def _tidy(nodes: list[Node]) -> list[Node]:
    """Empty texts and emptied inline elements dropped, neighbouring texts joined."""
    out: list[Node] = []
    for node in nodes:
        if isinstance(node, dict) and "c" in node and node.get("t") not in _CODE:
            node["c"] = _tidy(node["c"])
            if node.get("t") in _TRANSPARENT and not node["c"]:
                continue
        if node == "":
            continue
        if isinstance(node, str) and out and isinstance(out[-1], str):
            out[-1] += node
        else:
            out.append(node)
    return out


def drop_tag_text(nodes: Sequence[Node]) -> list[Node]:
    """``nodes`` without any text outside code that reads as a tag (see `TAG_TEXT`)."""
    tree = list(nodes)
    runs: list[list[_Leaf]] = [[]]
    _runs(tree, runs)
    changed = False
    for run in runs:
        if any("<" in leaf.shown for leaf in run):
            before = [leaf.shown for leaf in run]
            _strip(run)
            changed |= before != [leaf.shown for leaf in run]
    return _tidy(tree) if changed else tree
