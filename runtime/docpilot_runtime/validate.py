"""Stage 6 of a turn: the model's answer is checked in code before any of it renders.

The model is never trusted. Its markdown cites excerpts with markers written ``[[ID]]``;
this module keeps a marker only when the turn emitted that id, numbers the survivors
``[1]``..``[n]`` in first-seen order, keeps a link only when its page and anchor exist
(or, for an ``http(s)`` link, when an emitted excerpt carried that URL), neutralises raw
HTML outside code and caps the length. The same scanner runs on the token stream
(`StreamValidator`) and on the whole text (`validate_answer`), so the streamed text is
byte for byte the batch result.

How the output stays inert. The widget re-parses what we emit, so every rule is stated
about the *output*: outside code, ``<`` is always ``&lt;`` (but for an allowed autolink);
a backtick, a run of three tildes, a bracket or a ``>`` that is not part of structure we
recognised is escaped, so it cannot pair with something later, and so are a "!" before a
bracket and a "(" or ":" right after a citation (an image, a link, a link definition);
no link definitions survive, so ``[1]`` stays text. The only verbatim regions are code
spans closed on their own line and fenced blocks whose every line is kept inside the
block in any reading of the list or quote around it (less-indented lines are
re-indented, ambiguous closing lines escaped). Code stays verbatim because the widget
escapes code.

Pure Python (standard library); `validate_actions` imports ``jsonschema`` when called.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

from .types import Citation

if TYPE_CHECKING:
    from .bundle import Page

MAX_ANSWER_CHARS = 6000
# The cap cuts at the best boundary in the last CUT_WINDOW characters before it (or a
# quarter of the cap, when that is smaller); text before the window is never cut away,
# which is what lets the stream release it as soon as it is validated.
CUT_WINDOW = 600
MAX_ACTIONS = 3

# How far ahead a construct is looked for before it is taken as plain text. Bounded so a
# stray "[" or "`" holds the stream back by at most this much.
MARKER_SPAN = 300
LINK_SPAN = 1000
CODE_SPAN = 1000
AUTOLINK_SPAN = 500
_MAX_LINK_DEPTH = 3

_PLAIN = re.compile(r"[^\n \t\\`~<>!\[\]]+")
_TICK_OR_NEWLINE = re.compile(r"[`\n]")
_BRACKET_SPECIAL = re.compile(r"[\n\\`\[\]]")
_ASCII_PUNCT = set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]{1,31}:")
_EMAIL = re.compile(r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)+")
_FENCE_INFO = re.compile(r"[\w.+#\-]+")
_BARE_NUMBER = re.compile(r"\d{1,4}")
_PARAGRAPH_END = re.compile(r"\n[ \t>]*\n")
_SENTENCE_END = re.compile(r"[.!?][\"'”’)\]*_]*(?:\[\d+\])*$")
# Characters a destination may not carry even when its page exists.
_BAD_DESTINATION = re.compile(r"[\s\x00-\x1f\x7f\\`<>\"]")
_URL_SAFE = "/#:@!$&'*+,;=%-._~?"


@dataclass(frozen=True)
class Source:
    """An excerpt this turn emitted: a unit (with its page url) or a site tool's reply."""

    id: str
    url: str  # "" for a site tool's observation: it has no page
    title: str


@dataclass
class ValidatedAnswer:
    markdown: str  # markers as [1]..[n] in first-seen order, invented ones removed
    citations: list[Citation] = field(default_factory=list)  # in n order
    dropped_citations: list[str] = field(default_factory=list)  # ids never emitted
    delinked: list[str] = field(default_factory=list)  # link targets made plain text
    truncated: bool = False


def cut_window(limit: int) -> int:
    """How far before ``limit`` a cut may land (see `CUT_WINDOW`)."""
    return max(1, min(CUT_WINDOW, limit // 4))


# --------------------------------------------------------------------------- links


def _page_key(path: str) -> str:
    """A page path with the spellings of one page made equal: leading and trailing
    slashes, ``index.html``/``index.md``, ``.html``/``.md`` suffixes and dot segments."""
    segments: list[str] = []
    for segment in unquote(path).split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if segments:
                segments.pop()
            continue
        segments.append(segment)
    if segments and segments[-1] in ("index.html", "index.htm", "index.md"):
        segments.pop()
    elif segments:
        for suffix in (".html", ".htm", ".md"):
            if segments[-1].endswith(suffix) and len(segments[-1]) > len(suffix):
                segments[-1] = segments[-1][: -len(suffix)]
                break
    return "/".join(segments)


def _external_key(url: str) -> str:
    """An external URL compared without its fragment, a trailing slash, or case in the
    scheme and host."""
    url = url.strip().split("#", 1)[0]
    match = re.match(r"([A-Za-z][A-Za-z0-9+.\-]*:)(//[^/?]*)?(.*)", url, re.S)
    if not match:
        return url
    scheme, host, rest = match.group(1).lower(), (match.group(2) or "").lower(), match.group(3)
    if rest.endswith("/"):
        rest = rest[:-1]
    return scheme + host + rest


class _Links:
    """The page set and the allowed external URLs: which link targets may stay."""

    def __init__(self, pages: Sequence[Page], allowed_external: Collection[str]) -> None:
        self.pages: dict[str, Page] = {}
        for page in pages:
            self.pages.setdefault(_page_key(page.url), page)
        self.allowed = {_external_key(u) for u in allowed_external if isinstance(u, str)}

    def resolve(self, target: str) -> str | None:
        """The URL to emit for a link target, or None when it must become plain text."""
        target = target.strip()
        if not target or _BAD_DESTINATION.search(target):
            return None
        if _SCHEME.match(target) or target.startswith("//"):
            if _external_key(target) in self.allowed:
                return quote(target, safe=_URL_SAFE)
            return None
        path, _, anchor = target.partition("#")
        path = path.split("?", 1)[0]
        page = self.pages.get(_page_key(path))
        if page is None:
            return None
        anchor = unquote(anchor)
        if anchor and anchor not in page.ids:
            return None
        url = quote(page.url, safe=_URL_SAFE)
        return f"{url}#{quote(anchor, safe='-._~!$&*+,;=:@/?')}" if anchor else url


def _escape_plain(text: str) -> str:
    """Text that renders as itself and pairs with nothing: for a delinked autolink."""
    out = []
    for ch in text:
        if ch == "<":
            out.append("&lt;")
        elif ch == ">":
            out.append("&gt;")
        elif ch in "\\`*_[]~!|":
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def _unescape_destination(text: str) -> str:
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", text)


# ------------------------------------------------------------------------- scanner


class _NeedMore(Exception):
    """The construct at this position cannot be decided before more text arrives."""


@dataclass
class _Fence:
    char: str
    length: int
    indent: int
    record: list[Any]  # [open_start, close_end | None, closer line]


class _Scanner:
    """Left-to-right validation of the answer's markdown.

    `scan` consumes only what it can decide; with ``final=False`` it stops before a
    construct whose meaning depends on text not yet seen, so feeding the same text in any
    pieces produces the same output as feeding it whole.
    """

    def __init__(
        self,
        emitted: Mapping[str, Source],
        pages: Sequence[Page],
        allowed_external: Collection[str],
        keep: int,
    ) -> None:
        self.emitted = emitted
        self.links = _Links(pages, allowed_external)
        # Output past the cap is never shown: beyond `keep` characters only the
        # bookkeeping (numbers, dropped ids, delinked targets) goes on.
        self.keep = keep
        self.text = ""
        self.sink: list[str] | None = None  # set while rendering a link's text
        self.numbers: dict[str, int] = {}
        self.first_offset: dict[int, int] = {}
        self.cite_end: int | None = None
        self.marker_count = 0
        self.dropped: list[str] = []
        self.delinked: list[str] = []
        self.atomic_starts: list[int] = []
        self.atomic_ends: list[int] = []
        self.fences: list[list[Any]] = []
        self.fence: _Fence | None = None
        self.fence_mid_line = False
        self.line_start = True
        self.in_prefix = False
        self.line_blank = True
        self.prev_blank = True
        self.pending = ""  # spaces held until we know no removed marker follows
        self.skip_ws = False
        # The kind of the last token emitted ("marker", "code", "bang" or ""): what a
        # following token must not be glued to.
        self.last = ""
        self.group: set[int] = set()

    # -- output

    def _put(self, s: str, atomic: bool = False) -> None:
        if self.sink is not None:
            self.sink.append(s)
            return
        if len(self.text) > self.keep:
            return
        start = len(self.text)
        self.text += s
        if atomic and len(s) > 1:
            self.atomic_starts.append(start)
            self.atomic_ends.append(len(self.text))

    def _emit(self, s: str, *, atomic: bool = False, cite: bool = False, kind: str = "") -> None:
        """Emit a token that stays, after the whitespace held before it."""
        if self.pending:
            self._put(self.pending)
            self.pending = ""
        self._put(s, atomic)
        if s.strip():
            self.line_blank = False
        self.skip_ws = False
        self.last = kind
        self.group = set()
        if cite and self.sink is None and self.cite_end is None:
            self.cite_end = len(self.text)

    def _remove(self) -> None:
        """A marker that carries nothing is dropped with the space before it (or, at the
        start of a line, the space after it). The space stays after a "!", which would
        otherwise turn a following link into an image."""
        if self.last != "bang":
            self.pending = ""
        if self.line_blank:
            self.skip_ws = True

    def _newline(self) -> None:
        if self.pending:
            self._put(self.pending)
            self.pending = ""
        self._put("\n")
        self.prev_blank = self.line_blank
        self.line_blank = True
        self.line_start = True
        self.skip_ws = False
        self.last = ""
        self.group = set()

    # -- driving

    def scan(self, buf: str, pos: int, final: bool) -> int:
        """Consume ``buf`` from ``pos`` as far as can be decided; return where it stopped."""
        while pos < len(buf):
            try:
                if self.fence is not None:
                    pos = self._fence_line(buf, pos, final)
                elif self.line_start:
                    pos = self._line_start(buf, pos, final)
                elif self.in_prefix:
                    pos = self._prefix(buf, pos)
                else:
                    pos = self._step(buf, pos, final, 0)
            except _NeedMore:
                break
        if final:
            self.pending = ""
        return pos

    def _more(self, buf: str, origin: int, span: int, final: bool) -> None:
        """Raise _NeedMore when the search from ``origin`` hit the end of the text we have
        before its bound and more text may still come."""
        if not final and len(buf) < origin + span:
            raise _NeedMore

    # -- block level

    def _line_start(self, buf: str, pos: int, final: bool) -> int:
        """At the start of a line outside a fence: open a fence, or go on to the line."""
        j = pos
        while j < len(buf) and buf[j] == " ":
            j += 1
        if j == len(buf) and not final:
            raise _NeedMore
        if j < len(buf) and buf[j] in "`~":
            ch = buf[j]
            k = j
            while k < len(buf) and buf[k] == ch:
                k += 1
            if k == len(buf) and not final:
                raise _NeedMore
            indent = j - pos
            if k - j >= 3 and (indent <= 3 or self.prev_blank):
                newline = buf.find("\n", k)
                if newline == -1 and not final:
                    raise _NeedMore
                line_end = len(buf) if newline == -1 else newline
                info = buf[k:line_end]
                if ch != "`" or "`" not in info:
                    self._open_fence(ch, k - j, indent, info, newline != -1)
                    return line_end + 1 if newline != -1 else line_end
        self.line_start = False
        self.in_prefix = True
        return pos

    def _open_fence(self, ch: str, length: int, indent: int, info: str, newline: bool) -> None:
        # Only the language word of the info string is kept: the rest is model text that
        # a renderer may put into an attribute.
        language = _FENCE_INFO.match(info.strip())
        start = len(self.text)
        self._emit(" " * indent + ch * length + (language.group() if language else ""), atomic=True)
        record: list[Any] = [start, None, " " * indent + ch * length]
        self.fences.append(record)
        if newline:
            self._put("\n")
        self.fence = _Fence(ch, length, indent, record)
        self.fence_mid_line = False
        self.line_start = True
        self.line_blank = True
        self.prev_blank = False

    def _fence_line(self, buf: str, pos: int, final: bool) -> int:
        """Inside a fence: lines are verbatim, kept inside the block in every reading."""
        fence = self.fence
        assert fence is not None
        if self.fence_mid_line:
            newline = buf.find("\n", pos)
            if newline == -1:
                self._put(buf[pos:])
                return len(buf)
            self._put(buf[pos : newline + 1])
            self.fence_mid_line = False
            return newline + 1
        j, col = pos, 0
        while j < len(buf) and buf[j] in " \t":
            col = col + 1 if buf[j] == " " else col + 4 - col % 4
            j += 1
        if j == len(buf):
            if not final:
                raise _NeedMore
            self._put(buf[pos:])
            return j
        if buf[j] == "\n":
            self._put(buf[pos : j + 1])
            return j + 1
        if buf[j] == fence.char:
            k = j
            while k < len(buf) and buf[k] == fence.char:
                k += 1
            if k == len(buf) and not final:
                raise _NeedMore
            if k - j >= fence.length:
                newline = buf.find("\n", k)
                if newline == -1 and not final:
                    raise _NeedMore
                line_end = len(buf) if newline == -1 else newline
                rest = buf[k:line_end]
                if not rest.strip(" \t"):
                    return self._fence_closer(buf, pos, j, k, col, line_end, newline != -1)
        prefix = buf[pos:j]
        if col < fence.indent:
            # A less-indented line would end a list item (and the fence with it) in one
            # reading and not in another; indented to the fence it is code in both.
            prefix = " " * fence.indent
        self._put(prefix)
        self.fence_mid_line = True
        return j

    def _fence_closer(
        self, buf: str, pos: int, j: int, k: int, col: int, line_end: int, newline: bool
    ) -> int:
        fence = self.fence
        assert fence is not None
        run = k - j
        upper = 3 if fence.indent <= 3 else fence.indent
        if col <= upper:
            # Closes the block in every reading: at the opener's indentation or, for a
            # top-level fence, anywhere up to three spaces.
            indent = max(col, fence.indent)
            self._put(" " * indent + fence.char * run, atomic=True)
            fence.record[1] = len(self.text)
            self.fence = None
            if newline:
                self._put("\n")
            self.line_start = True
            self.line_blank = True
            self.prev_blank = False
            return line_end + 1 if newline else line_end
        if col <= fence.indent + 3:
            # Closes the block only if the fence sits in a list item: escaped, it closes
            # nothing, and the block goes on in every reading.
            self._put(buf[pos:j] + ("\\" + fence.char) * run + buf[k:line_end])
        else:
            self._put(buf[pos:line_end])
        if newline:
            self._put("\n")
        return line_end + 1 if newline else line_end

    def _prefix(self, buf: str, pos: int) -> int:
        """The indentation and blockquote markers that open a line stay as they are."""
        ch = buf[pos]
        if ch in " \t":
            self._put(ch)
            return pos + 1
        if ch == ">":
            self._emit(">")
            return pos + 1
        self.in_prefix = False
        return pos

    # -- inline level

    def _step(self, buf: str, pos: int, final: bool, depth: int) -> int:
        ch = buf[pos]
        if ch == "\n":
            self._newline()
            return pos + 1
        if ch in " \t":
            if not self.skip_ws:
                self.pending += ch
            return pos + 1
        if self.last == "marker" and not self.pending and ch in "(:":
            # "[1](x)" would be a link and "[1]: x" a link definition.
            self._emit("\\" + ch, atomic=True)
            return pos + 1
        if ch == "\\":
            if pos + 1 >= len(buf):
                if not final:
                    raise _NeedMore
                self._emit("\\")
                return pos + 1
            nxt = buf[pos + 1]
            if nxt == "<":
                self._emit("&lt;", atomic=True)
            elif nxt == ">":
                self._emit("&gt;", atomic=True)
            elif nxt in _ASCII_PUNCT:
                self._emit("\\" + nxt, atomic=True)
            else:
                self._emit("\\")
                return pos + 1
            return pos + 2
        if ch == "`":
            end, is_span = self._code_span(buf, pos, final)
            if is_span:
                if self.last == "code" and not self.pending:
                    # Only a removed marker can have made two spans touch; touching,
                    # their backtick runs would merge into one.
                    self.pending = " "
                self._emit(buf[pos:end], atomic=True, kind="code")
            else:
                self._emit("\\`" * (end - pos), atomic=True)
            return end
        if ch == "~":
            k = pos
            while k < len(buf) and buf[k] == "~":
                k += 1
            if k == len(buf) and not final:
                raise _NeedMore
            run = k - pos
            # Three tildes could open a fence in a list item or a quote; two are strikeout.
            self._emit("\\~" * run if run >= 3 else "~" * run, atomic=run >= 3)
            return k
        if ch == "<":
            return self._angle(buf, pos, final)
        if ch == ">":
            self._emit("&gt;", atomic=True)
            return pos + 1
        if ch == "!":
            if pos + 1 >= len(buf) and not final:
                raise _NeedMore
            if pos + 1 < len(buf) and buf[pos + 1] == "[" and depth < _MAX_LINK_DEPTH:
                link = self._inline_link(buf, pos + 1, final)
                if link is not None:
                    text_end, destination, end = link
                    alt, cited = self._render_inline(buf[pos + 2 : text_end], depth + 1)
                    self._note_delinked(destination)
                    if alt:
                        self._emit(alt, atomic=True, cite=cited)
                    return end
            # Before a "[" that did not make an image, the "!" is escaped: whatever the
            # bracket turns into must not become one.
            if pos + 1 < len(buf) and buf[pos + 1] == "[":
                self._emit("\\!", atomic=True)
            else:
                self._emit("!", kind="bang")
            return pos + 1
        if ch == "[":
            return self._bracket(buf, pos, final, depth)
        if ch == "]":
            self._emit("\\]", atomic=True)
            return pos + 1
        match = _PLAIN.match(buf, pos)
        assert match is not None
        self._emit(match.group())
        return match.end()

    def _code_span(self, buf: str, pos: int, final: bool) -> tuple[int, bool]:
        """(end, True) for a code span closed on the same line, else (end of the opening
        run, False): an unclosed run is literal text."""
        k = pos
        while k < len(buf) and buf[k] == "`":
            k += 1
        if k == len(buf) and not final:
            raise _NeedMore
        run = k - pos
        bound = min(len(buf), pos + CODE_SPAN)
        i = k
        while True:
            found = _TICK_OR_NEWLINE.search(buf, i, bound)
            i = found.start() if found else bound
            if i >= bound:
                self._more(buf, pos, CODE_SPAN, final)
                return k, False
            if buf[i] == "\n":
                return k, False
            j = i
            while j < len(buf) and buf[j] == "`":
                j += 1
            if j == len(buf) and not final:
                raise _NeedMore
            if j - i == run:
                content = buf[k:i]
                # In a table row a "|" splits the cell even inside backticks, which
                # would leave the rest of this span outside code.
                if "|" in content and "<" in content:
                    return k, False
                return j, True
            i = j

    def _angle(self, buf: str, pos: int, final: bool) -> int:
        """An autolink, or a "<" that is text."""
        bound = min(len(buf), pos + AUTOLINK_SPAN)
        j = pos + 1
        while j < bound and buf[j] not in "<> \t\n":
            j += 1
        if j >= bound:
            self._more(buf, pos, AUTOLINK_SPAN, final)
        elif buf[j] == ">" and j > pos + 1:
            content = buf[pos + 1 : j]
            target: str | None = None
            if _SCHEME.match(content):
                target = content
            elif _EMAIL.fullmatch(content):
                target = "mailto:" + content
            elif content.startswith("/") and self.links.resolve(content) is not None:
                # Only a real page: "</script>" is a closing tag, not a route.
                target = content
            if target is not None:
                url = self.links.resolve(target)
                if url is None:
                    self._note_delinked(content)
                    self._emit(_escape_plain(content), atomic=True)
                elif target.startswith("/"):
                    self._emit(f"[{_escape_plain(content)}]({url})", atomic=True)
                else:
                    # The resolver refused anything an autolink could not hold.
                    self._emit(f"<{content}>", atomic=True)
                return j + 1
        self._emit("&lt;", atomic=True)
        return pos + 1

    def _bracket(self, buf: str, pos: int, final: bool, depth: int) -> int:
        if depth >= _MAX_LINK_DEPTH:
            self._emit("\\[", atomic=True)
            return pos + 1
        if pos + 1 >= len(buf) and not final:
            raise _NeedMore
        if pos + 1 < len(buf) and buf[pos + 1] == "[":
            end = self._marker_end(buf, pos, final)
            if end is not None:
                self._marker(buf[pos + 2 : end - 2])
                return end
        close = self._bracket_close(buf, pos, final)
        if close is None:
            self._emit("\\[", atomic=True)
            return pos + 1
        if close + 1 >= len(buf) and not final:
            raise _NeedMore
        if close + 1 < len(buf) and buf[close + 1] == "(":
            link = self._inline_link(buf, pos, final)
            if link is not None:
                _, destination, end = link
                self._link(buf[pos + 1 : close], destination, depth)
                return end
        elif _BARE_NUMBER.fullmatch(buf[pos + 1 : close]):
            # "[3]" written by the model would read as a citation it never earned.
            self._remove()
            return close + 1
        self._emit("\\[", atomic=True)
        return pos + 1

    def _marker_end(self, buf: str, pos: int, final: bool) -> int | None:
        """End of a ``[[...]]`` marker opening at ``pos`` on this line, or None."""
        bound = min(len(buf), pos + MARKER_SPAN)
        k = pos + 2
        while k < bound and buf[k] not in "[]\n":
            k += 1
        if k >= bound:
            self._more(buf, pos, MARKER_SPAN, final)
            return None
        if buf[k] != "]":
            return None
        if k + 1 >= len(buf):
            if not final:
                raise _NeedMore
            return None
        return k + 2 if buf[k + 1] == "]" else None

    def _marker(self, content: str) -> None:
        valid: list[int] = []
        for raw in content.split(","):
            cid = raw.strip().strip("`'\"<>").strip()
            if not cid:
                continue
            if cid not in self.emitted:
                if cid not in self.dropped:
                    self.dropped.append(cid)
                continue
            n = self.numbers.get(cid)
            if n is None:
                n = self.numbers[cid] = len(self.numbers) + 1
                # Where the marker will start: after the spaces held before it (in a
                # link's text, where the link starts).
                held = len(self.pending) if self.sink is None else 0
                self.first_offset[n] = len(self.text) + held
            if n not in valid:
                valid.append(n)
        fresh = [n for n in valid if n not in self.group]
        if not fresh:
            self._remove()
            return
        group = set(self.group) if not self.pending else set()
        self._emit("".join(f"[{n}]" for n in fresh), atomic=True, cite=True, kind="marker")
        self.marker_count += 1
        self.group = group | set(fresh)

    def _bracket_close(self, buf: str, pos: int, final: bool) -> int | None:
        """The "]" matching the "[" at ``pos`` on the same line (brackets nest; escapes
        and code spans do not count), or None."""
        bound = min(len(buf), pos + LINK_SPAN)
        depth = 0
        i = pos
        while i < bound:
            found = _BRACKET_SPECIAL.search(buf, i, bound)
            if found is None:
                break
            i = found.start()
            ch = buf[i]
            if ch == "\n":
                return None
            if ch == "\\":
                if i + 1 >= len(buf) and not final:
                    raise _NeedMore
                i += 2
                continue
            if ch == "`":
                i, _ = self._code_span(buf, i, final)
                continue
            if ch == "[":
                depth += 1
            elif ch == "]":
                depth -= 1
                if depth == 0:
                    return i
            i += 1
        self._more(buf, pos, LINK_SPAN, final)
        return None

    def _inline_link(self, buf: str, pos: int, final: bool) -> tuple[int, str, int] | None:
        """For ``[text](destination "title")`` at ``pos``: (end of text, destination, end),
        or None when it is not an inline link."""
        close = self._bracket_close(buf, pos, final)
        if close is None:
            return None
        if close + 1 >= len(buf):
            if not final:
                raise _NeedMore
            return None
        if buf[close + 1] != "(":
            return None
        origin = close + 1
        bound = min(len(buf), origin + LINK_SPAN)

        def need(i: int) -> bool:
            """True when ``i`` is inside what we have; else more text or not a link."""
            if i < bound:
                return True
            self._more(buf, origin, LINK_SPAN, final)
            return False

        j = origin + 1
        while need(j) and buf[j] in " \t":
            j += 1
        if not need(j):
            return None
        if buf[j] == "<":
            k = j + 1
            while need(k) and buf[k] not in "<>\n":
                k += 1
            if not need(k) or buf[k] != ">":
                return None
            destination = buf[j + 1 : k]
            j = k + 1
        else:
            k, parens = j, 0
            while need(k):
                ch = buf[k]
                if ch == "\\":
                    k += 2
                    continue
                if ch in " \t\n" or ord(ch) < 32:
                    break
                if ch == "(":
                    parens += 1
                elif ch == ")":
                    if parens == 0:
                        break
                    parens -= 1
                k += 1
            if not need(k):
                return None
            destination = buf[j:k]
            j = k
        while need(j) and buf[j] in " \t":
            j += 1
        if not need(j):
            return None
        if buf[j] in "\"'(" and j > origin + 1:
            closer = ")" if buf[j] == "(" else buf[j]
            k = j + 1
            while need(k) and buf[k] not in (closer, "\n"):
                k += 2 if buf[k] == "\\" else 1
            if not need(k) or buf[k] != closer:
                return None
            j = k + 1
            while need(j) and buf[j] in " \t":
                j += 1
            if not need(j):
                return None
        if buf[j] != ")":
            return None
        return close, _unescape_destination(destination), j + 1

    def _link(self, text: str, destination: str, depth: int) -> None:
        url = self.links.resolve(destination) if depth == 0 else None
        if self.pending:
            self._put(self.pending)
            self.pending = ""
        inner, cited = self._render_inline(text, depth + 1)
        if url is None:
            self._note_delinked(destination)
            if inner:
                self._emit(inner, atomic=True, cite=cited)
            return
        if inner:
            self._emit(f"[{inner}]({url})", atomic=True, cite=cited)

    def _note_delinked(self, target: str) -> None:
        if target not in self.delinked:
            self.delinked.append(target)

    def _render_inline(self, text: str, depth: int) -> tuple[str, bool]:
        """A link's (or image's) text, validated like the answer; links inside it become
        their text, since links do not nest."""
        if self.pending:
            self._put(self.pending)
            self.pending = ""
        saved = (self.sink, self.skip_ws, self.line_blank, self.last, self.group)
        sink: list[str] = []
        self.sink, self.skip_ws, self.line_blank = sink, False, True
        self.last, self.group = "", set()
        before = self.marker_count
        pos = 0
        while pos < len(text):
            pos = self._step(text, pos, True, depth)
        self.pending = ""
        cited = self.marker_count > before
        self.sink, self.skip_ws, self.line_blank, self.last, self.group = saved
        return "".join(sink), cited

    # -- cutting

    def inside_atomic(self, p: int) -> int | None:
        """The start of the token that ``p`` falls strictly inside, if any."""
        i = bisect.bisect_right(self.atomic_starts, p) - 1
        if i >= 0 and self.atomic_starts[i] < p < self.atomic_ends[i]:
            return self.atomic_starts[i]
        return None


def _fence_at(fences: Sequence[Sequence[Any]], p: int) -> str | None:
    """The closing line for the fence that position ``p`` is inside, if any."""
    for start, end, closer in fences:
        if start < p and (end is None or p < end):
            return str(closer)
    return None


def _choose_cut(
    head: str,
    limit: int,
    fences: Sequence[Sequence[Any]],
    inside_atomic: Callable[[int], int | None],
) -> tuple[int, str | None]:
    """Where to cut ``head`` (at least ``limit + 1`` characters) so the kept text fits
    ``limit``: the last paragraph or sentence end in the window, else the last line end,
    else the last word end, else a line end inside a fence (which is then closed); with
    none of those, the start of the window. Returns (position, fence closer or None)."""
    low = max(0, limit - cut_window(limit))
    best: tuple[int, int, str | None] = (-1, -1, None)
    for p in range(low + 1, limit + 1):
        ch = head[p]
        if not ch.isspace() or head[p - 1].isspace() or inside_atomic(p) is not None:
            continue
        closer = _fence_at(fences, p)
        if closer is not None:
            if ch != "\n" or p + 1 + len(closer) > limit:
                continue
            tier = 0
        elif _PARAGRAPH_END.match(head, p) or _SENTENCE_END.search(head[max(0, p - 40) : p]):
            tier = 3
        elif ch == "\n":
            tier = 2
        else:
            tier = 1
        if (tier, p) > best[:2]:
            best = (tier, p, closer)
    if best[0] >= 0:
        return best[1], best[2]
    p = _hard_cut(low, limit, fences, inside_atomic)
    return p, _fence_at(fences, p)


def _hard_cut(
    low: int,
    limit: int,
    fences: Sequence[Sequence[Any]],
    inside_atomic: Callable[[int], int | None],
) -> int:
    """The cut when the window has no boundary: the window's start, moved back out of
    any token it splits and, inside a fence, far enough for the fence's closing line."""
    start = inside_atomic(low)
    p = low if start is None else start
    closer = _fence_at(fences, p)
    if closer is not None and p + 1 + len(closer) > limit:
        p = max(0, limit - 1 - len(closer))
        start = inside_atomic(p)
        p = p if start is None else start
    return p


def _fence_spans(text: str) -> list[list[Any]]:
    """Fenced blocks of plain markdown as [open_start, close_end | None, closer]."""
    spans: list[list[Any]] = []
    open_fence: tuple[str, int, list[Any]] | None = None
    offset = 0
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\n")
        stripped = body.lstrip(" ")
        indent = len(body) - len(stripped)
        match = re.match(r"(`{3,}|~{3,})(.*)", stripped)
        if open_fence is None:
            if match and indent <= 3 and not (match.group(1)[0] == "`" and "`" in match.group(2)):
                record: list[Any] = [offset, None, " " * indent + match.group(1)]
                spans.append(record)
                open_fence = (match.group(1)[0], len(match.group(1)), record)
        elif (
            match
            and indent <= 3
            and match.group(1)[0] == open_fence[0]
            and len(match.group(1)) >= open_fence[1]
            and not match.group(2).strip()
        ):
            open_fence[2][1] = offset + len(body)
            open_fence = None
        offset += len(line)
    return spans


def truncate_markdown(markdown: str, limit: int) -> tuple[str, bool]:
    """``markdown`` cut to at most ``limit`` characters at a paragraph or sentence
    boundary (near the limit), never inside a code fence: a fence the cut must land in is
    closed. Returns (text, truncated)."""
    if len(markdown) <= limit:
        return markdown, False
    spans = _fence_spans(markdown)
    cut, closer = _choose_cut(markdown[: limit + 1], limit, spans, lambda p: None)
    return markdown[:cut] + ("\n" + closer if closer else ""), True


# ----------------------------------------------------------------------- public API


class StreamValidator:
    """Validates markdown as it streams. feed() returns text safe to send now; nothing is
    released before the first valid citation marker has arrived (so an answer that ends
    uncited is never shown).

    Concatenated, what feed() and finish() return is exactly
    ``validate_answer(whole text).markdown`` of a cited answer. What is held back: a
    construct that may still be completed (a marker, a link, a code span, an autolink, a
    line that may open or close a fence, spaces that may precede a removed marker) and,
    near the length cap, the text a cut may still remove.
    """

    def __init__(
        self,
        emitted: Mapping[str, Source],
        pages: Sequence[Page],
        max_chars: int = MAX_ANSWER_CHARS,
        allowed_external: Collection[str] = (),
    ) -> None:
        if max_chars < 1:
            raise ValueError(f"max_chars must be at least 1, got {max_chars}")
        self.emitted = emitted
        self.max_chars = max_chars
        self._scanner = _Scanner(emitted, pages, allowed_external, keep=max_chars + 1)
        self._buf = ""
        self._released = 0
        self._final: tuple[str, bool, int] | None = None
        self._finished = False
        self._answer_citations: list[str] = []

    def _settle(self) -> tuple[str, bool, int] | None:
        """The final text once it is decided: (text, truncated, cut)."""
        if self._final is not None:
            return self._final
        text = self._scanner.text
        if len(text) > self.max_chars:
            cut, closer = _choose_cut(
                text[: self.max_chars + 1],
                self.max_chars,
                self._scanner.fences,
                self._scanner.inside_atomic,
            )
            kept = text[:cut] + ("\n" + closer if closer else "")
            self._final = (kept, True, cut)
        elif self._finished:
            self._final = (text, False, len(text))
        return self._final

    def _bound(self) -> int:
        """How much of the scanner's output is sure to be in the final text."""
        text = self._scanner.text
        low = max(0, self.max_chars - cut_window(self.max_chars))
        if len(text) <= low:
            return len(text)
        return _hard_cut(low, self.max_chars, self._scanner.fences, self._scanner.inside_atomic)

    def _release(self) -> str:
        final = self._settle()
        cite_end = self._scanner.cite_end
        if final is not None:
            text, _, cut = final
            if cite_end is None or cite_end > cut:
                return ""
            out, self._released = text[self._released :], len(text)
            return out
        bound = self._bound()
        if cite_end is None or cite_end > bound or bound <= self._released:
            return ""
        out = self._scanner.text[self._released : bound]
        self._released = bound
        return out

    def feed(self, delta: str) -> str:
        """Take the next piece of the answer; return the validated text now safe to send."""
        if self._finished:
            raise RuntimeError("feed() after finish()")
        self._buf += delta.replace("\r", "").replace("\x00", "")
        pos = self._scanner.scan(self._buf, 0, final=False)
        self._buf = self._buf[pos:]
        return self._release()

    def finish(self) -> str:
        """The rest of the validated answer, or "" when no valid citation ever came."""
        if not self._finished:
            self._scanner.scan(self._buf, 0, final=True)
            self._buf = ""
            self._finished = True
        return self._release()

    @property
    def cited(self) -> bool:
        """True once a valid citation is sure to be in the final text."""
        cite_end = self._scanner.cite_end
        if cite_end is None:
            return False
        final = self._settle()
        if final is not None:
            return cite_end <= final[2]
        return cite_end <= self._bound()

    def result(self, answer_citations: Collection[str] = ()) -> ValidatedAnswer:
        """The authoritative validated answer (call after finish())."""
        if not self._finished:
            self.finish()
        final = self._settle()
        assert final is not None
        text, truncated, cut = final
        scanner = self._scanner
        by_number = {n: cid for cid, n in scanner.numbers.items()}
        citations = []
        for n in sorted(by_number):
            if scanner.first_offset[n] >= cut:
                break
            source = self.emitted[by_number[n]]
            citations.append(Citation(n=n, id=source.id, url=source.url, title=source.title))
        dropped = list(scanner.dropped)
        for cid in answer_citations:
            if isinstance(cid, str) and cid not in self.emitted and cid not in dropped:
                dropped.append(cid)
        return ValidatedAnswer(
            markdown=text,
            citations=citations,
            dropped_citations=dropped,
            delinked=list(scanner.delinked),
            truncated=truncated,
        )


def validate_answer(
    markdown: str,
    emitted: Mapping[str, Source],
    pages: Sequence[Page],
    max_chars: int = MAX_ANSWER_CHARS,
    allowed_external: Collection[str] = (),
    answer_citations: Collection[str] = (),
) -> ValidatedAnswer:
    """Check a whole answer: citations against ``emitted``, links against ``pages`` and
    ``allowed_external``, raw HTML neutralised, length capped at ``max_chars``.

    ``answer_citations`` (the ids listed in the answer call) only adds the invented ones
    to ``dropped_citations``; a citation counts only where a marker puts it in the text.
    """
    validator = StreamValidator(emitted, pages, max_chars, allowed_external)
    validator.feed(markdown)
    validator.finish()
    return validator.result(answer_citations)


def validate_actions(
    offered: Any, declared: Sequence[Mapping[str, Any]], limit: int = MAX_ACTIONS
) -> list[dict[str, Any]]:
    """The actions the answer offered that the site declared, with arguments that pass
    the declared JSON Schema, without exact duplicates, at most ``limit``, in the order
    offered. Anything malformed is dropped, never raised; the label and url come from the
    declaration, never from the model."""
    from jsonschema import validators

    if not isinstance(offered, list | tuple):
        return []
    declarations: dict[str, Mapping[str, Any]] = {}
    for declaration in declared if isinstance(declared, list | tuple) else ():
        if isinstance(declaration, Mapping) and isinstance(declaration.get("name"), str):
            declarations.setdefault(declaration["name"], declaration)
    kept: list[dict[str, Any]] = []
    seen: set[str] = set()
    for entry in offered:
        if len(kept) >= limit:
            break
        if not isinstance(entry, Mapping):
            continue
        name = entry.get("name")
        declaration = declarations.get(name) if isinstance(name, str) else None
        if declaration is None:
            continue
        arguments = entry.get("arguments", {})
        if isinstance(arguments, str):  # OpenAI-style tools send arguments as JSON text
            try:
                arguments = json.loads(arguments)
            except ValueError:
                continue
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            continue
        try:
            canonical = json.dumps(arguments, sort_keys=True, ensure_ascii=False)
        except (TypeError, ValueError):
            continue
        schema: Any = declaration.get("parameters")
        if schema is None:
            schema = {"type": "object", "maxProperties": 0}
        if not isinstance(schema, Mapping | bool):
            continue
        checked: Any = schema
        try:
            cls = validators.validator_for(checked)
            cls.check_schema(checked)
            if not cls(checked).is_valid(arguments):
                continue
        except Exception:  # a broken declared schema drops the action, never the turn
            continue
        key = json.dumps([name, canonical])
        if key in seen:
            continue
        seen.add(key)
        action: dict[str, Any] = {"name": name, "arguments": json.loads(canonical)}
        for extra in ("label", "url", "description"):
            value = declaration.get(extra)
            if isinstance(value, str) and value:
                action[extra] = value
        kept.append(action)
    return kept
