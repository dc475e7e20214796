"""Code blocks in answers coloured as the site colours its own code.

Material's `pymdownx.highlight` wraps each token of a code block in a span whose class is
Pygments' short name for the token type (`k` keyword, `s2` string, `nt` name tag, ...),
and the theme's CSS colours those classes in both palettes. The runtime runs the same
lexers over each `pre` node of an answer's tree and adds the tokens as ``"hl": [[class,
text], ...]`` pairs: data, never markup, which the widget turns into spans with DOM APIs
(see `docpilot.js`). The text of the pairs is exactly the node's code; a language Pygments
does not know gets no pairs (plain code, as in static mode, which never highlights).

Applied where results leave the server (`app`), after the turn: records, `docpilot ask`
and the static-mode equality tests see the tree without it. Server only (Pygments is not
part of the browser core).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name
from pygments.token import STANDARD_TYPES
from pygments.util import ClassNotFound

from docpilot_runtime.shared.markdown_tree import Node

__all__ = ["MAX_HIGHLIGHT_CHARS", "code_tokens", "highlight_blocks", "highlight_result"]

# A longer block stays plain: the answer cap (6,000 characters by default) keeps real
# ones far below this, and it bounds the lexers' work per block.
MAX_HIGHLIGHT_CHARS = 20_000
_LEXERS: dict[str, Lexer | None] = {}


def _lexer(lang: str) -> Lexer | None:
    key = lang.lower()
    if key not in _LEXERS:
        try:
            # As pymdownx.highlight reads fences: no stripping, no added final newline.
            _LEXERS[key] = get_lexer_by_name(key, stripnl=False, ensurenl=False)
        except ClassNotFound:
            _LEXERS[key] = None
    return _LEXERS[key]


def _css_class(ttype: Any) -> str:
    """Pygments' short class for a token type: the nearest standard ancestor's ("" for
    plain text), which is what the site's stylesheet colours."""
    while ttype not in STANDARD_TYPES and ttype.parent is not None:
        ttype = ttype.parent
    return str(STANDARD_TYPES.get(ttype, ""))


def code_tokens(code: str, lang: str) -> list[list[str]] | None:
    """``code`` as [class, text] pairs (neighbours of one class merged), or None when the
    language is unknown, the block too long, or the lexer changed the text."""
    lexer = _lexer(lang) if lang and len(code) <= MAX_HIGHLIGHT_CHARS else None
    if lexer is None:
        return None
    pairs: list[list[str]] = []
    for ttype, text in lexer.get_tokens(code):
        if not text:
            continue
        css = _css_class(ttype)
        if pairs and pairs[-1][0] == css:
            pairs[-1][1] += text
        else:
            pairs.append([css, text])
    if "".join(text for _, text in pairs) != code:
        return None
    return pairs


def highlight_blocks(blocks: Sequence[Node]) -> list[Node]:
    """A copy of ``blocks`` whose `pre` nodes carry `hl` pairs where their language is
    known (the input is left as it was)."""
    out: list[Node] = []
    for node in blocks:
        if not isinstance(node, dict):
            out.append(node)
        elif node.get("t") == "pre":
            code = "".join(c for c in node.get("c", []) if isinstance(c, str))
            pairs = code_tokens(code, str(node.get("lang") or ""))
            out.append({**node, "hl": pairs} if pairs else node)
        elif isinstance(node.get("c"), list):
            out.append({**node, "c": highlight_blocks(node["c"])})
        else:
            out.append(node)
    return out


def highlight_result(data: dict[str, Any]) -> dict[str, Any]:
    """A result object or a `delta` event's data with its trees highlighted."""
    for key in ("blocks", "draft"):
        if isinstance(data.get(key), list):
            data = {**data, key: highlight_blocks(data[key])}
    return data
