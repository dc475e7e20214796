"""Reading Markdown as CommonMark with GFM's tables, strikethrough and task lists:
markdown-it-py's tokens turned into the element tree.

One parser configuration serves the validator's first reading of the model's text and
its second reading of its own output: CommonMark plus the GFM table and strikethrough
rules; task list items read here (``- [x] done``: an item whose first paragraph starts
with ``[ ]``, ``[x]`` or ``[X]`` and a space, as markdown-it's task list plugins read
them); raw HTML read as HTML so that it degrades to its text content (`raw_html`: a
tag never renders and never prints); every link's URL handed to the caller, whatever
its scheme (a ``javascript:`` link the caller rejects shows its label, not its
source); link reference definitions off (a later ``[x]: url`` line can never turn
earlier brackets into a link, which is what lets the validator release text block by
block); nesting bounded. What the tree may hold is decided by the caller's hooks: the
text of each text run (citations), each link's URL (the page set) and each code's
text. A table too deep to keep its four levels is read as one paragraph per row, its
cells joined by " | ".
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

from docpilot_runtime.check.raw_html import drop_tag_text, text_content
from docpilot_runtime.shared.markdown_tree import (
    ALIGNMENTS,
    MAX_CONTAINER_DEPTH,
    MAX_DEPTH,
    TABLE_LEVELS,
    Node,
    language_word,
)

# markdown-it-py recurses once per nested block; past this depth it drops the rest.
PARSER_NESTING = 20



class _Reader(MarkdownIt):
    def validateLink(self, url: str) -> bool:
        """Every link is a link here: the caller's hook decides what it may keep."""
        return True


_PARSER = (
    _Reader("commonmark", {"html": True, "maxNesting": PARSER_NESTING})
    .enable(["table", "strikethrough"])
    .disable("reference")
)
# A character reference to a private-use character: the validator's placeholders are
# such characters, so none may be written (it reads as U+FFFD instead).
_REFERENCE = re.compile(r"&#(?:[xX]([0-9a-fA-F]{1,6})|([0-9]{1,7}));")
_PRIVATE_USE = range(0xE000, 0xF900)
_CONTAINER_TAGS = ("blockquote", "ul", "ol", "li")
_INLINE_MAX = 4  # em/strong/del/a levels inside a block
_TASK = re.compile(r"\[([ xX])\] ")  # a task list item's first characters (raw)
_ALIGN = re.compile(r"text-align:(\w+)")
_MARKS = {"em_open": "em", "strong_open": "strong", "s_open": "del"}
_MARK_CLOSES = ("em_close", "strong_close", "s_close")
_TABLE_OPENS = ("table_open", "thead_open", "tbody_open", "tr_open", "th_open", "td_open")


def _no_private_reference(match: re.Match[str]) -> str:
    number = int(match.group(1), 16) if match.group(1) else int(match.group(2))
    return "&#xFFFD;" if number in _PRIVATE_USE else match.group()


def parse(markdown: str) -> list[Token]:
    """The tokens of ``markdown`` under the one configuration."""
    return _PARSER.parse(_REFERENCE.sub(_no_private_reference, markdown))


@dataclass
class Hooks:
    """What the caller decides while the tree is built."""

    text: Callable[[str], list[Node]]  # a text run -> nodes (strings and cites)
    code: Callable[[str], str]  # the text of a code span or block
    link: Callable[[str, bool], str | None]  # (href, autolink) -> href to keep, or None


class _Builder:
    def __init__(self, hooks: Hooks) -> None:
        self.hooks = hooks
        self.root: dict[str, Any] = {"t": "root", "c": []}
        # (node or None when flattened, tag); None nodes pass children to the parent.
        self.stack: list[tuple[dict[str, Any] | None, str]] = [(self.root, "root")]
        self.flat_table = False  # the table being read is too deep: rows as paragraphs
        self.first_cell = False

    def _parent(self) -> dict[str, Any]:
        for node, _ in reversed(self.stack):
            if node is not None:
                found: dict[str, Any] = node
                return found
        return self.root

    def _depth(self) -> int:
        return sum(1 for node, _ in self.stack[1:] if node is not None)

    def _containers(self) -> int:
        return sum(1 for node, tag in self.stack if node is not None and tag in _CONTAINER_TAGS)

    def append(self, node: Node) -> None:
        parent = self._parent()
        if isinstance(node, dict) and parent["t"] in ("ul", "ol") and node.get("t") != "li":
            # A block lifted out of a flattened item still sits in an item.
            if (
                not parent["c"]
                or not isinstance(parent["c"][-1], dict)
                or parent["c"][-1].get("_lifted") is None
            ):
                parent["c"].append({"t": "li", "c": [], "_lifted": True})
            parent["c"][-1]["c"].append(node)
            return
        if isinstance(node, str) and parent["c"] and isinstance(parent["c"][-1], str):
            parent["c"][-1] += node
            return
        if node != "":
            parent["c"].append(node)

    def open(self, tag: str, attrs: dict[str, Any] | None = None, inline: int = 0) -> None:
        container = tag in _CONTAINER_TAGS
        too_deep = self._depth() >= MAX_DEPTH - 2 or inline >= _INLINE_MAX
        if container and self._containers() >= MAX_CONTAINER_DEPTH:
            too_deep = True
        if too_deep:
            self.stack.append((None, tag))
            return
        node: dict[str, Any] = {"t": tag, "c": []}
        if attrs:
            node.update(attrs)
        self.append(node)
        self.stack.append((node, tag))

    def close(self) -> None:
        if len(self.stack) > 1:
            node, _ = self.stack.pop()
            if node is not None and node["t"] in ("em", "strong", "del", "a") and not node["c"]:
                self._parent()["c"].remove(node)

    def inline(self, children: list[Token]) -> None:
        inline_depth = 0
        link_kept: list[bool] = []
        for token in children:
            kind = token.type
            if kind in ("text", "text_special"):
                for node in self.hooks.text(token.content):
                    self.append(node)
            elif kind == "softbreak":
                self.append("\n")
            elif kind == "hardbreak":
                self.append({"t": "br"})
            elif kind == "code_inline":
                code = self.hooks.code(token.content)
                if code:
                    self.append({"t": "code", "c": [code]})
            elif kind in _MARKS:
                self.open(_MARKS[kind], inline=inline_depth)
                inline_depth += 1
            elif kind in _MARK_CLOSES:
                inline_depth -= 1
                self.close()
            elif kind == "link_open":
                href = self.hooks.link(str(token.attrs.get("href", "")), token.markup == "autolink")
                link_kept.append(href is not None)
                if href is not None:
                    self.open("a", {"href": href}, inline=inline_depth)
                    inline_depth += 1
            elif kind == "link_close":
                if link_kept and link_kept.pop():
                    inline_depth -= 1
                    self.close()
            elif kind == "image":
                # No images: a reader sees the alt text (a beacon cannot load).
                self.inline(token.children or [])
            elif kind == "html_inline":
                continue  # a tag: the text around and inside it stays
            elif token.content:
                for node in self.hooks.text(token.content):
                    self.append(node)

    def task(self, inline: Token, opened: list[Token]) -> None:
        """Mark the item a task when this is its first paragraph's text and it starts
        with a task marker; the marker leaves the text."""
        children = inline.children or []
        if [t.type for t in opened[-2:]] != ["list_item_open", "paragraph_open"]:
            return
        match = _TASK.match(inline.content)
        if not match or not children or children[0].type != "text":
            return
        if not children[0].content.startswith(match.group()):
            return
        item = self.stack[-2][0] if len(self.stack) > 2 and self.stack[-1][1] == "p" else None
        if item is None or item.get("t") != "li":
            return
        item["checked"] = match.group(1) != " "
        children[0].content = children[0].content[len(match.group()) :]

    def table(self, token: Token) -> bool:
        """Open a table part; True when it was one."""
        kind = token.type
        if kind == "table_open":
            self.flat_table = self._depth() + TABLE_LEVELS > MAX_DEPTH - 2
            if self.flat_table:
                self.stack.append((None, "table"))
            else:
                self.open("table")
        elif not self.flat_table:
            if kind in ("th_open", "td_open"):
                align = _ALIGN.search(str(token.attrs.get("style", "")))
                found = align.group(1) if align else ""
                self.open(token.tag, {"align": found} if found in ALIGNMENTS else None)
            else:
                self.open(token.tag)
        elif kind == "tr_open":
            self.open("p")
            self.first_cell = True
        else:  # thead, tbody, a cell: no element of its own
            if kind in ("th_open", "td_open") and not self.first_cell:
                self.append(" | ")
            self.first_cell = False
            self.stack.append((None, token.tag))
        return True

    def build(self, tokens: list[Token]) -> list[Node]:
        for index, token in enumerate(tokens):
            kind = token.type
            if kind == "inline":
                self.task(token, tokens[max(0, index - 2) : index])
                self.inline(token.children or [])
            elif kind in _TABLE_OPENS:
                self.table(token)
            elif kind in ("fence", "code_block"):
                node: dict[str, Any] = {"t": "pre", "c": [self.hooks.code(token.content)]}
                language = language_word(self.hooks.code(token.info)) if kind == "fence" else ""
                if language:
                    node["lang"] = language
                self.append(node)
            elif kind == "hr":
                self.append({"t": "hr"})
            elif kind == "html_block":
                shown = text_content(token.content)
                if shown:
                    self.open("p")
                    for piece in self.hooks.text(shown):
                        self.append(piece)
                    self.close()
            elif token.nesting == 1:
                tag = token.tag
                attrs: dict[str, Any] = {}
                if tag == "ol":
                    start = token.attrs.get("start")
                    if start is not None:
                        attrs["start"] = int(start)
                self.open(tag, attrs)
            elif token.nesting == -1:
                self.close()
        return _finish(self.root["c"])


def _finish(nodes: list[Node]) -> list[Node]:
    """Drop the builder's marks and empty inline containers; strip a trailing hard break
    from a block (CommonMark reads it as a backslash)."""
    stack = [nodes]
    while stack:
        current = stack.pop()
        for node in current:
            if isinstance(node, dict):
                node.pop("_lifted", None)
                children = node.get("c")
                if children is not None:
                    while (
                        children
                        and isinstance(children[-1], dict)
                        and children[-1].get("t") == "br"
                    ):
                        children.pop()
                    stack.append(children)
    return nodes


def to_tree(tokens: list[Token], hooks: Hooks) -> list[Node]:
    """The element tree of ``tokens``: only allowed elements, at most MAX_DEPTH deep, no
    text outside code that reads as a tag."""
    return drop_tag_text(_Builder(hooks).build(tokens))
