"""The element tree a reader's widget draws, and the Markdown text it stands for.

Every answer the runtime returns carries `blocks`: a sanitised element tree in JSON (a
small set of element names, text nodes, a validated ``href`` on links and nothing
else). The widget builds DOM from it with ``createElement``/``textContent`` and never
parses Markdown, so brackets cannot re-pair into links on the way. `markdown` (what the
client sends back as history) is serialised from the same tree, escaped so that any
CommonMark reader shows the same text (the validator proves it by parsing its own
output again).

Node shapes (JSON):

- a string: a text node (``"\\n"`` inside it is a soft line break);
- ``{"t": TAG, "c": [node, ...]}`` for TAG in `CONTAINERS` and `INLINE`;
- ``{"t": "a", "href": URL, "c": [...]}``: a link whose URL the validator accepted; an
  off-site one also has ``"external": HOST`` (`check.links.mark_offsite_links`);
- ``{"t": "pre", "lang": WORD, "c": [text]}``, ``{"t": "code", "c": [text]}``;
- ``{"t": "ol", "start": N, "c": [...]}``;
- ``{"t": "li", "checked": BOOL, "c": [...]}``: a task list item (GFM), done or not;
- ``{"t": "del", "c": [...]}``: struck-out text (GFM ``~~``);
- a GFM table: ``{"t": "table", "c": [thead, tbody?]}``, ``thead``/``tbody`` holding
  ``tr`` rows of ``th``/``td`` cells (inline nodes), a cell with ``"align"`` =
  ``left`` | ``center`` | ``right`` when its column says so; every row has the header's
  number of cells;
- ``{"t": "cite", "n": N}``: citation marker N (the result's ``citations[n-1]``);
- ``{"t": "br"}``, ``{"t": "hr"}``.

Nesting is at most `MAX_DEPTH` elements deep. Pure Python: the browser's static mode
builds its passages and refusals here too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

Node = str | dict[str, Any]

BLOCKS = ("p", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "ul", "ol", "li", "pre", "hr")
TABLE = ("table", "thead", "tbody", "tr", "th", "td")
INLINE = ("em", "strong", "del", "a", "code", "br", "cite")
CONTAINERS = ("p", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "ul", "ol", "li")
ALLOWED = frozenset(BLOCKS + TABLE + INLINE)
ALIGNMENTS = ("left", "center", "right")
TABLE_LEVELS = 4  # table, thead/tbody, tr, th/td: the levels a table needs below its place
MAX_DEPTH = 12  # elements, counted from a top-level block; the widget caps the same
MAX_CONTAINER_DEPTH = 8  # blockquote/ul/ol/li levels kept; deeper ones are flattened

_LANGUAGE = re.compile(r"[\w.+#-]{1,40}")
# Characters that are Markdown anywhere in a line; more are escaped at a line's start.
_ESCAPE_ANYWHERE = re.compile(r"([\\`*_\[\]<>&#~!|])")
_ORDERED = re.compile(r"(\d{1,9})[.)]")
_DELIMITER_ROW = re.compile(r":[-: \t]*")  # (a "-" at a line's start is escaped anyway)
_DESTINATION_ESCAPE = re.compile(r"([\\()<>&\s])")
_MARKS = {"em": "*", "strong": "**", "del": "~~"}
_DELIMITERS = {"left": ":--", "center": ":-:", "right": "--:"}


def text_of(nodes: Sequence[Node]) -> str:
    """The text a reader sees in ``nodes`` (citations as ``[n]``)."""
    out: list[str] = []
    stack: list[Node] = list(reversed(nodes))
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            out.append(node)
        elif node.get("t") == "cite":
            out.append(f"[{node.get('n')}]")
        elif node.get("t") == "br":
            out.append("\n")
        else:
            stack.extend(reversed(node.get("c", [])))
    return "".join(out)


def cites_in(nodes: Sequence[Node]) -> list[int]:
    """The citation numbers in ``nodes``, in document order."""
    found: list[int] = []
    stack: list[Node] = list(reversed(nodes))
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("t") == "cite":
                found.append(int(node["n"]))
            stack.extend(reversed(node.get("c", [])))
    return found


def language_word(info: str) -> str:
    """The part of a fence's info string a renderer may use: its first word, if plain."""
    match = _LANGUAGE.match(info.strip())
    return match.group() if match else ""


# ------------------------------------------------------------------ builders


def text(value: str) -> str:
    return value


def element(tag: str, *children: Node, **attrs: Any) -> dict[str, Any]:
    """An element node; ``tag`` must be in `ALLOWED`."""
    if tag not in ALLOWED:
        raise ValueError(f"element {tag!r} is not in the allowed set {sorted(ALLOWED)}")
    node: dict[str, Any] = {"t": tag}
    node.update(attrs)
    if tag not in ("br", "hr", "cite"):
        node["c"] = list(children)
    return node


def code_block(code: str, language: str = "") -> dict[str, Any]:
    node = element("pre", code)
    word = language_word(language)
    if word:
        node["lang"] = word
    return node


# ---------------------------------------------------------------- serialising

CiteText = Callable[[int], str]


def _cite_text(n: int) -> str:
    return f"[{n}]"


def _escape_line_start(line: str) -> str:
    """A line of paragraph text that cannot open a block: list markers, a setext
    underline, an ordered item's dot, a table's delimiter row (":-" under a line that
    holds an escaped pipe makes one)."""
    if line[:1] in ("-", "+", "=") or _DELIMITER_ROW.fullmatch(line):
        return "\\" + line
    match = _ORDERED.match(line)
    return f"{match.group(1)}\\{line[len(match.group(1)) :]}" if match else line


def _escape_text(value: str, line_start: bool) -> str:
    value = _ESCAPE_ANYWHERE.sub(r"\\\1", value)
    value = re.sub(r"[ \t]*\n[ \t]*", "\n", value)
    if line_start:
        value = value.lstrip(" \t")
    lines = value.split("\n")
    return "\n".join(
        _escape_line_start(line) if i or line_start else line for i, line in enumerate(lines)
    )


def _code_span(value: str) -> str:
    value = value.replace("\n", " ")
    if not value:
        return ""
    longest = max((len(run) for run in re.findall(r"`+", value)), default=0)
    fence = "`" * (longest + 1)
    pad = (
        value[0] == "`"
        or value[-1] == "`"
        or (value[0] == " " and value[-1] == " " and value.strip() != "")
    )
    return f"{fence} {value} {fence}" if pad else f"{fence}{value}{fence}"


def _inline(
    nodes: Sequence[Node], cite: CiteText, at_line_start: bool, cell: bool = False
) -> str:
    """Inline nodes as escaped Markdown; in a table ``cell`` a line break is a space and
    a code span's pipes are escaped (GFM splits a row before it reads code)."""
    out: list[str] = []
    after_cite = False

    def line_start() -> bool:
        joined = out[-1] if out else ""
        return (not out and at_line_start) or joined.endswith("\n")

    for node in nodes:
        if isinstance(node, str):
            piece = _escape_text(node, line_start())
            if after_cite and piece[:1] in ("(", ":"):
                piece = "\\" + piece
        else:
            tag = node.get("t")
            children = node.get("c", [])
            if tag == "cite":
                piece = cite(int(node["n"]))
            elif tag == "br":
                piece = " " if cell else "\\\n"
            elif tag == "code":
                piece = _code_span(text_of(children))
                if cell:
                    piece = piece.replace("|", "\\|")
            elif tag in _MARKS:
                inner = _inline(children, cite, line_start(), cell)
                mark = _MARKS[tag]
                piece = f"{mark}{inner}{mark}" if inner.strip() else inner
            elif tag == "a":
                inner = _inline(children, cite, line_start(), cell)
                href = _DESTINATION_ESCAPE.sub(
                    lambda m: "%20" if m.group(1).isspace() else "\\" + m.group(1),
                    str(node.get("href", "")),
                )
                piece = f"[{inner}]({href})" if inner.strip() and href else inner
            else:
                piece = _inline(children, cite, line_start(), cell)
            if after_cite and piece[:1] in ("(", ":") and tag != "cite":
                piece = "\\" + piece
        after_cite = isinstance(node, dict) and node.get("t") == "cite"
        if piece:
            out.append(piece)
    return "".join(out)


def _indent(lines: list[str], first: str, rest: str) -> list[str]:
    if not lines:
        return [first.rstrip()]
    return [first + lines[0]] + [rest + line if line else "" for line in lines[1:]]


def _block_lines(node: Node, cite: CiteText) -> list[str]:
    if isinstance(node, str):
        node = {"t": "p", "c": [node]}
    tag = node.get("t")
    children = node.get("c", [])
    if tag == "p":
        body = _inline(children, cite, True).strip("\n")
        return body.split("\n") if body.strip() else []
    if tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
        body = _inline(children, cite, True).replace("\\\n", " ").replace("\n", " ").strip()
        return ["#" * int(tag[1]) + (" " + body if body else "")]
    if tag == "hr":
        return ["***"]
    if tag == "pre":
        code = text_of(children)
        if code.endswith("\n"):
            code = code[:-1]
        longest = max((len(run) for run in re.findall(r"`{3,}", code)), default=2)
        fence = "`" * max(3, longest + 1)
        lines = code.split("\n") if code else []
        return [fence + language_word(str(node.get("lang", ""))), *lines, fence]
    if tag == "blockquote":
        inner = _blocks_lines(children, cite)
        return [("> " + line) if line else ">" for line in inner] or [">"]
    if tag in ("ul", "ol"):
        out: list[str] = []
        number = int(node.get("start", 1)) if tag == "ol" else 0
        for item in children:
            item_blocks = (
                item.get("c", []) if isinstance(item, dict) and item.get("t") == "li" else [item]
            )
            marker = f"{number}. " if tag == "ol" else "- "
            number += 1
            lines = _blocks_lines(item_blocks, cite)
            checked = item.get("checked") if isinstance(item, dict) else None
            if isinstance(checked, bool) and lines and _first_is_paragraph(item_blocks):
                lines[0] = ("[x] " if checked else "[ ] ") + lines[0]
            out.extend(_indent(lines, marker, " " * len(marker)))
        return out
    if tag == "table":
        return _table_lines(node, cite)
    # li outside a list, or anything else: its blocks
    return _blocks_lines(children, cite)


def _first_is_paragraph(blocks: Sequence[Node]) -> bool:
    return bool(blocks) and isinstance(blocks[0], dict) and blocks[0].get("t") == "p"


def table_rows(table: dict[str, Any]) -> list[dict[str, Any]]:
    """A table's rows, the header's first (thead and tbody are read through)."""
    rows: list[dict[str, Any]] = []
    for child in table.get("c", []):
        if not isinstance(child, dict):
            continue
        if child.get("t") == "tr":
            rows.append(child)
        elif child.get("t") in ("thead", "tbody"):
            rows.extend(r for r in child.get("c", []) if isinstance(r, dict) and r.get("t") == "tr")
    return rows


def _cells(row: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in row.get("c", []) if isinstance(c, dict) and c.get("t") in ("th", "td")]


def _table_lines(node: dict[str, Any], cite: CiteText) -> list[str]:
    """A GFM table: the header row, its delimiter row (with the columns' alignment), then
    the body rows, each cut or filled to the header's width."""
    rows = table_rows(node)
    header = _cells(rows[0]) if rows else []
    if not header:
        return []

    def line(cells: list[dict[str, Any]]) -> str:
        texts = [
            _inline(c.get("c", []), cite, False, cell=True).replace("\n", " ").strip()
            for c in cells
        ]
        texts = (texts + [""] * len(header))[: len(header)]
        return "| " + " | ".join(texts) + " |"

    delimiter = " | ".join(_DELIMITERS.get(str(c.get("align")), "---") for c in header)
    return [line(header), f"| {delimiter} |", *(line(_cells(row)) for row in rows[1:])]


def _blocks_lines(nodes: Sequence[Node], cite: CiteText) -> list[str]:
    out: list[str] = []
    for node in nodes:
        lines = _block_lines(node, cite)
        if not lines:
            continue
        if out:
            out.append("")
        out.extend(lines)
    return out


def to_markdown(blocks: Sequence[Node], cite: CiteText = _cite_text) -> str:
    """CommonMark text that reads as ``blocks``: text escaped, citations as ``[n]``."""
    return "\n".join(_blocks_lines(blocks, cite))


# ------------------------------------------------------------------- cutting


def _clip(node: Node, budget: list[int]) -> Node | None:
    """``node`` with at most ``budget[0]`` characters of text, cut at a word."""
    if budget[0] <= 0:
        return None
    if isinstance(node, str):
        if len(node) <= budget[0]:
            budget[0] -= len(node)
            return node
        cut = node[: budget[0]]
        space = cut.rfind(" ")
        cut = cut[:space] if space > len(cut) // 2 else cut
        budget[0] = 0
        return cut.rstrip() or None
    tag = node.get("t")
    if tag in ("cite", "br", "hr"):
        budget[0] -= 3
        return node
    if tag == "pre":
        code = text_of(node.get("c", []))
        kept, size = [], 0
        for line in code.split("\n"):
            if size + len(line) + 1 > budget[0]:
                break
            kept.append(line)
            size += len(line) + 1
        budget[0] -= size
        return {**node, "c": ["\n".join(kept)]} if kept else None
    children = []
    for child in node.get("c", []):
        clipped = _clip(child, budget)
        if clipped is not None:
            children.append(clipped)
        if budget[0] <= 0:
            break
    if not children:
        return None
    return {**node, "c": children}


def truncate_blocks(blocks: Sequence[Node], limit: int) -> tuple[list[Node], bool]:
    """The longest prefix of ``blocks`` whose Markdown fits ``limit`` characters; the
    block that does not fit is cut at a word, a line of code or an item. Returns
    (blocks, truncated)."""
    kept: list[Node] = []
    used = 0
    for block in blocks:
        size = len(to_markdown([block])) + (2 if kept else 0)
        if used + size <= limit:
            kept.append(block)
            used += size
            continue
        room = limit - used - (2 if kept else 0)
        allowance = room
        while allowance >= 20:
            clipped = _clip(block, [allowance])
            if clipped is not None and len(to_markdown([clipped])) <= room:
                kept.append(clipped)
                break
            allowance = allowance * 2 // 3
        return kept, True
    return kept, False


# ----------------------------------------------------- the runtime's own texts

_TRUSTED_INLINE = re.compile(r"\\([!-/:-@\[-`{-~])|\*\*(.+?)\*\*|`([^`\n]+)`")


def trusted_inline(value: str) -> list[Node]:
    """Inline nodes of a text we or the site wrote: ``**strong**``, `` `code` `` and
    backslash escapes; everything else is text."""
    nodes: list[Node] = []
    last = 0
    plain: list[str] = []
    for match in _TRUSTED_INLINE.finditer(value):
        plain.append(value[last : match.start()])
        last = match.end()
        if match.group(1) is not None:
            plain.append(match.group(1))
            continue
        if plain and "".join(plain):
            nodes.append("".join(plain))
        plain = []
        if match.group(2) is not None:
            nodes.append(element("strong", *trusted_inline(match.group(2))))
        else:
            nodes.append(element("code", match.group(3)))
    plain.append(value[last:])
    if "".join(plain):
        nodes.append("".join(plain))
    return nodes


def trusted_blocks(markdown: str) -> list[Node]:
    """The tree of a text the runtime or the site owner wrote (a credential reply, a
    social template): paragraphs split at blank lines, ``**strong**``, `` `code` `` and
    backslash escapes, nothing else. Never for model output or docs text: those go
    through the validator or are built as trees. A test holds it equal to CommonMark on
    every text we ship."""
    blocks: list[Node] = []
    for paragraph in re.split(r"\n[ \t]*\n", markdown.strip()):
        lines = [line.strip() for line in paragraph.split("\n") if line.strip()]
        if lines:
            blocks.append(element("p", *trusted_inline("\n".join(lines))))
    return blocks
