"""Stage 6 of a turn: the model's answer is checked in code before any of it renders.

The model is never trusted. Its text is read as CommonMark (markdown-it-py, see
`markdown_parse`), and the element tree a reader's widget draws is built from those
tokens: citation markers kept only for excerpts this turn emitted and renumbered
(`citations`), links kept only for pages and anchors that exist or off-site URLs an
excerpt carried (`links`), raw HTML and images left as text, nesting bounded. The
answer's `markdown` is serialised from that tree and read again, and the tree that
ships is the one read from the shipped text, so the two cannot disagree.

Streaming: the text is cut into pieces where CommonMark cannot carry a block across.
A blank line outside a fence closes a paragraph, heading, quote or fenced block for
good, so a piece holding none of the two containers a blank line leaves open (a list,
whose items may go on, or indented code) is cut right there; a piece holding one is cut
only once the next block has begun outside it, at a line that starts no list item,
quote or indented block (its first character decides, so the cut comes as soon as that
character arrives). Reference definitions are off, so nothing later changes what came
before. Each piece is validated once, so the cost is linear in the answer's length and
the streamed pieces are exactly the batch result.

What is shown when: nothing before the first valid citation (an answer that never cites
becomes a refusal, so until then none of it may be shown); from that citation on, every
validated piece as soon as it is cut, and the block still being written as a validated
draft. The first citation is looked for as each chunk arrives: when the open block
gains a marker naming an excerpt this turn emitted, the block is read at once and
shown up to that marker with the pieces held before it, so a model that cites at the
end of a sentence, a list item or a paragraph shows its text the moment that citation
is complete, not when its block ends. Later drafts are read when the open block has
doubled (a linear cost in total).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from docpilot_runtime.check.citations import PRIVATE, Citations, Source
from docpilot_runtime.check.links import LinkPolicy, mark_offsite_links
from docpilot_runtime.check.markdown_parse import Hooks, parse, to_tree
from docpilot_runtime.settings.answer import MAX_ANSWER_CHARS
from docpilot_runtime.shared.fences import FenceTracker
from docpilot_runtime.shared.markdown_tree import Node, cites_in, to_markdown, truncate_blocks
from docpilot_runtime.shared.types import Citation

if TYPE_CHECKING:
    from docpilot_runtime.bundle.schema import Page

__all__ = [
    "MAX_ANSWER_CHARS",
    "Piece",
    "Source",
    "StreamValidator",
    "ValidatedAnswer",
    "validate_answer",
]

_CITE_MARK = "\ue002"  # in the text read a second time: "[" + this + n + "]" is citation n
_SECOND_CITE = f"[{_CITE_MARK}"
# A line after a blank one that starts with one of these may continue the block before.
_CONTINUES = (" ", "\t", ">", "-", "+", "*", *tuple("0123456789"))
# A line that opens a container a blank line leaves open: a list item (up to three
# spaces, a marker, then a space, a tab or the line's end), or indented code.
_OPENS_CONTAINER = re.compile(r" {0,3}(?:[-+*]|\d{1,9}[.)])(?:[ \t]|$)| {4}|\t")
# A draft of the open block is read again only when it has doubled (and grown by at
# least this much) since the last one: the re-reading stays linear in total.
_DRAFT_STEP = 200
# An open block longer than this is not drafted again: its rest shows once it is settled,
# which bounds what one feed() can cost.
DRAFT_LIMIT = 3000
# Before anything is shown, a new marker in the open block is looked for in each chunk
# holding a "]"; a block is read early for one at most once per this many characters.
_CITE_STEP = 64


@dataclass(frozen=True)
class Piece:
    """Validated text released at once: its Markdown and its tree, settled (concatenated,
    the pieces of an answer are its final `markdown` and `blocks`), and the validated
    tree of the block still being written (`draft`, shown after them until the next
    piece replaces it; it may still change, e.g. when a "*" finds its closer)."""

    markdown: str
    blocks: list[Node]
    draft: list[Node] = field(default_factory=list)


@dataclass
class ValidatedAnswer:
    markdown: str  # markers as [1]..[n] in first-seen order, invented ones removed
    blocks: list[Node] = field(default_factory=list)  # what the widget draws
    citations: list[Citation] = field(default_factory=list)  # in n order
    dropped_citations: list[str] = field(default_factory=list)  # ids never emitted
    delinked: list[str] = field(default_factory=list)  # link targets made plain text
    truncated: bool = False


def _settled(buf: str) -> str:
    """The open tail as far as its markers are settled: a single closing bracket at the
    very end may still gain a second (``[[ID]`` becoming ``[[ID]]``) or open a link
    (``[1]`` becoming ``[1](…)``), so the early reading waits for the next character."""
    return buf[:-1] if buf.endswith("]") and not buf.endswith("]]") else buf


class StreamValidator:
    """Validates an answer as it streams; feed() returns the Piece safe to show now."""

    def __init__(
        self,
        emitted: Mapping[str, Source],
        pages: Sequence[Page],
        max_chars: int = MAX_ANSWER_CHARS,
        allowed_external: Collection[str] = (),
        numbered: Sequence[str] = (),
    ) -> None:
        if max_chars < 1:
            raise ValueError(f"max_chars must be at least 1, got {max_chars}")
        self.emitted = emitted
        self.max_chars = max_chars
        self.links = LinkPolicy(pages, allowed_external)
        self.citations = Citations(emitted, numbered)
        self.delinked: list[str] = []
        self._buf = ""
        self._scan = 0  # start of the first line of _buf not yet looked at
        self._after_blank = False
        self._open_container = False  # the piece being read holds a list or indented code
        self._fences = FenceTracker()
        self._markdown: list[str] = []  # validated pieces, in order
        self._blocks: list[Node] = []
        self._length = 0
        self._held: list[Piece] = []  # validated, but no citation has arrived yet
        self._cited = False
        self._full = False  # the cap was reached: the rest is not read
        self.truncated = False
        self._finished = False
        self._draft_at = 0  # length of the open tail when it was last drafted
        self._draft: list[Node] = []
        self._shown = False  # a piece has been released
        self._markers_seen = 0  # valid markers found in the open tail so far

    # -- reading one piece

    def _link(self, href: str, autolink: bool) -> str | None:
        kept = self.links.resolve(href)
        if kept is None and href not in self.delinked:
            self.delinked.append(href)
        return kept

    def _first_reading(self, raw: str) -> list[Node]:
        marked = self.citations.mark(raw)
        hooks = Hooks(text=self.citations.expand, code=self.citations.verbatim, link=self._link)
        blocks = to_tree(parse(marked), hooks)
        mark_offsite_links(blocks, self.delinked)
        return blocks

    @staticmethod
    def _second_reading(text: str, hrefs: set[str]) -> list[Node]:
        """The tree of our own serialised text: citations from their marks, and only
        the links we wrote (anything else stays text)."""

        def expand(run: str) -> list[Node]:
            nodes: list[Node] = []
            parts = run.split(_SECOND_CITE)
            if parts[0]:
                nodes.append(parts[0])
            for part in parts[1:]:
                digits = len(part) - len(part.lstrip("0123456789"))
                if digits and part[digits : digits + 1] == "]":
                    nodes.append({"t": "cite", "n": int(part[:digits])})
                    rest = part[digits + 1 :]
                else:
                    rest = "[" + part
                if rest:
                    nodes.append(rest)
            return nodes

        hooks = Hooks(
            text=expand,
            code=lambda code: code.replace(_CITE_MARK, ""),
            link=lambda href, _autolink: href if href in hrefs else None,
        )
        return to_tree(parse(text), hooks)

    def _validate(self, raw: str) -> None:
        if self._full or not raw.strip():
            return
        blocks = self._first_reading(raw)
        room = self.max_chars - self._length - (2 if self._markdown else 0)
        if len(to_markdown(blocks)) > room:
            blocks, _ = truncate_blocks(blocks, max(room, 0))
            self._full = self.truncated = True
        if not blocks:
            return
        hrefs = set(_hrefs(blocks))
        second = to_markdown(blocks, cite=lambda n: f"{_SECOND_CITE}{n}]")
        blocks = self._second_reading(second, hrefs)
        mark_offsite_links(blocks, self.delinked)  # the marks the text does not carry
        markdown = second.replace(_CITE_MARK, "")
        if not blocks:
            return
        piece = Piece(("\n\n" if self._markdown else "") + markdown, blocks)
        self._markdown.append(piece.markdown)
        self._blocks.extend(blocks)
        self._length += len(piece.markdown)
        self._held.append(piece)
        if cites_in(blocks):
            self._cited = True

    # -- cutting the stream into pieces

    def _cut_pieces(self) -> None:
        buf = self._buf
        start = 0

        def cut(at: int) -> None:
            nonlocal start
            self._validate(buf[start:at])
            start = at
            self._open_container = False

        while True:
            newline = buf.find("\n", self._scan)
            if newline < 0:
                break
            line = buf[self._scan : newline]
            outside = self._fences.fence is None
            if self._after_blank and outside and self._begins_block(line) and self._scan > start:
                cut(self._scan)  # a piece with an open container, left by the next block
            in_fence = self._fences.line(line)
            if outside and not in_fence and _OPENS_CONTAINER.match(line):
                self._open_container = True
            self._after_blank = not line.strip() and not in_fence
            self._scan = newline + 1
            if self._after_blank and not self._open_container and buf[start : self._scan].strip():
                cut(self._scan)  # the blank line closed every block of the piece
        # The line still arriving: its first character can already say a block begins.
        rest = buf[self._scan :]
        if (
            self._after_blank
            and self._fences.fence is None
            and rest[:1].strip()
            and self._begins_block(rest)
            and self._scan > start
        ):
            cut(self._scan)
        self._buf = buf[start:]
        self._scan -= start

    @staticmethod
    def _begins_block(line: str) -> bool:
        """After a blank line: whether this line starts a block outside any open
        container (it starts no list item, quote or indented block)."""
        return bool(line.strip()) and not line.startswith(_CONTINUES)

    def _citation_arrived(self, delta: str) -> bool:
        """Before anything is shown: whether the open tail gained a marker naming an
        excerpt this turn emitted (markers only, no parse; one inside code is found too,
        and then the early reading shows nothing)."""
        tail = len(self._buf)
        if self._shown or self._full or "]" not in delta or tail > DRAFT_LIMIT:
            return False
        if self._markers_seen and tail < self._draft_at + _CITE_STEP:
            return False
        saved = self.citations.snapshot()
        found = len(cites_in(self.citations.expand(self.citations.mark(_settled(self._buf)))))
        self.citations.restore(saved)
        if found <= self._markers_seen:
            return False
        self._markers_seen = found
        return True

    def _drafted(self, early: bool = False) -> bool:
        """Read the open tail provisionally when it has grown enough (or ``early``, for a
        citation that just arrived); True when the draft changed. Citation numbers given
        out here are taken back."""
        tail = len(self._buf)
        if tail < self._draft_at:  # a piece was cut off: a new block is open
            self._draft_at = 0
        if self._full or tail > DRAFT_LIMIT:
            return False
        if not early and tail < max(self._draft_at * 2, self._draft_at + _DRAFT_STEP):
            return False
        self._draft_at = tail
        saved = self.citations.snapshot()
        delinked = list(self.delinked)
        draft = self._first_reading(_settled(self._buf))
        self.citations.restore(saved)
        self.delinked = delinked
        room = self.max_chars - self._length - (2 if self._markdown else 0)
        self._draft = truncate_blocks(draft, max(room, 0))[0]
        return True

    def _release(self, drafted: bool = False) -> Piece | None:
        draft_cited = bool(cites_in(self._draft))
        if not (self._cited or draft_cited) or not (self._held or drafted):
            return None
        held, self._held = self._held, []
        if self._finished:
            self._draft = []
        self._shown = True
        return Piece(
            "".join(p.markdown for p in held),
            [b for p in held for b in p.blocks],
            list(self._draft),
        )

    def feed(self, delta: str) -> Piece | None:
        """Take the next part of the answer; return what is now validated and safe to
        show (None when nothing is)."""
        if self._finished:
            raise RuntimeError("feed() after finish()")
        clean = PRIVATE.sub("", delta.replace("\r", "").replace("\x00", ""))
        self._buf += clean
        cut_before = len(self._markdown)
        self._cut_pieces()
        if len(self._markdown) > cut_before:
            self._draft, self._draft_at, self._markers_seen = [], 0, 0
        return self._release(self._drafted(early=self._citation_arrived(clean)))

    def finish(self) -> Piece | None:
        """The rest of the validated answer (None when no valid citation ever came)."""
        if not self._finished:
            self._finished = True
            self._validate(self._buf)
            self._buf = ""
            self._draft = []
        return self._release(drafted=True)

    @property
    def cited(self) -> bool:
        """True once a valid citation is in the validated text."""
        return self._cited

    def result(self, answer_citations: Collection[str] = ()) -> ValidatedAnswer:
        """The authoritative validated answer (call after finish())."""
        self.finish()
        numbers = cites_in(self._blocks)
        citations = []
        for n in sorted(set(numbers)):
            source = self.citations.source(n)
            citations.append(
                Citation(n, source.id, source.url, source.title, source.page_title, source.excerpt)
            )
        dropped = list(self.citations.dropped)
        for cid in answer_citations:
            if isinstance(cid, str) and cid not in self.emitted and cid not in dropped:
                dropped.append(cid)
        return ValidatedAnswer(
            markdown="".join(self._markdown),
            blocks=list(self._blocks),
            citations=citations,
            dropped_citations=dropped,
            delinked=list(self.delinked),
            truncated=self.truncated,
        )


def _hrefs(blocks: Sequence[Node]) -> list[str]:
    found: list[str] = []
    stack = list(blocks)
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("t") == "a":
                found.append(str(node.get("href", "")))
            stack.extend(node.get("c", []))
    return found


def validate_answer(
    markdown: str,
    emitted: Mapping[str, Source],
    pages: Sequence[Page],
    max_chars: int = MAX_ANSWER_CHARS,
    allowed_external: Collection[str] = (),
    answer_citations: Collection[str] = (),
) -> ValidatedAnswer:
    """Check a whole answer: citations against ``emitted``, links against ``pages`` and
    ``allowed_external``, raw HTML left as text, length capped at ``max_chars``.

    ``answer_citations`` is the answer call's ``citations`` array: ``[n]`` markers in
    the text name its n-th id (checked like ``[[ID]]`` markers); its invented ids are
    reported in ``dropped_citations``.
    """
    numbered = [c for c in answer_citations if isinstance(c, str)]
    validator = StreamValidator(emitted, pages, max_chars, allowed_external, numbered)
    validator.feed(markdown)
    return validator.result(numbered)
