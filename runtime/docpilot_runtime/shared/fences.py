"""The one code-fence scanner: which lines of a Markdown text open, hold and close
CommonMark fenced code blocks.

The validator's stream cutter, the memory's block splitter, the passages' excerpt
builder and the answer truncation all need to know whether a line is inside a fence;
they ask this module, so they agree with each other and with CommonMark (an opening
run of at least three backticks or tildes indented at most three spaces; a backtick
fence's info string holds no backtick; the closer is the same character, at least as
long, with nothing but spaces after it). Pure Python: it runs in the browser too.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

_OPENER = re.compile(r"( {0,3})(`{3,}|~{3,})(.*)")
_CLOSER = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*")


@dataclass(frozen=True)
class Fence:
    """An open fence: its character, run length, indent and info string."""

    char: str
    length: int
    indent: int
    info: str

    @property
    def language(self) -> str:
        """The info string's first word: the only part of it a renderer may use."""
        words = self.info.split()
        return words[0] if words else ""

    def closed_by(self, line: str) -> bool:
        """True when ``line`` ends this fence."""
        match = _CLOSER.fullmatch(line.rstrip("\n"))
        if match is None:
            return False
        return match.group(1)[0] == self.char and len(match.group(1)) >= self.length


def open_fence(line: str) -> Fence | None:
    """The fence ``line`` opens, or None when it opens none."""
    match = _OPENER.fullmatch(line.rstrip("\n"))
    if match is None:
        return None
    run, info = match.group(2), match.group(3)
    if run[0] == "`" and "`" in info:
        return None
    return Fence(char=run[0], length=len(run), indent=len(match.group(1)), info=info.strip())


@dataclass(frozen=True)
class FencedBlock:
    """A fenced block found in a text: line numbers of its opener and closer (None when
    the text ends inside it) and its fence."""

    start: int
    end: int | None
    fence: Fence


def fenced_blocks(lines: list[str]) -> Iterator[FencedBlock]:
    """The fenced blocks among ``lines``, in order (one pass, linear)."""
    current: Fence | None = None
    start = 0
    for number, line in enumerate(lines):
        if current is None:
            current = open_fence(line)
            start = number
        elif current.closed_by(line):
            yield FencedBlock(start, number, current)
            current = None
    if current is not None:
        yield FencedBlock(start, None, current)


class FenceTracker:
    """Line-by-line state for a text that arrives in pieces: is the next line inside a
    fence?"""

    def __init__(self) -> None:
        self.fence: Fence | None = None

    def line(self, line: str) -> bool:
        """Take one line; True when it belongs to a fenced block (opener and closer too)."""
        if self.fence is None:
            self.fence = open_fence(line)
            return self.fence is not None
        if self.fence.closed_by(line):
            self.fence = None
        return True
