"""One model call's deltas on their way to the reader, through the validator.

A reply may carry its answer in three places: the `answer` tool call's ``markdown``
argument (streamed as argument JSON), the same call written out as text (a fenced JSON
block, Qwen's ``<tool_call>``, a bare JSON object, or a schema-constrained JSON reply),
or plain prose. `ReplyStream` routes each delta: JSON, wherever it comes from, goes
through `JsonStringField` to the call's validator; prose goes to its own validator,
but only where the profile lets prose be the answer while it streams (a prompt with no
tools). Whichever validator first releases text owns what the reader sees; the other
stays silent. Nothing unvalidated is ever shown, and the final result (validated again
as a whole when it differs) is authoritative.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable

from docpilot_runtime.answer.replies import DECLINE_LEAD, MIN_ANSWER_CHARS, declines
from docpilot_runtime.check.validate import Piece, StreamValidator

_CALL_OPENERS = ("<tool_call>", "{")
_MARKER = re.compile(r"\[\[?[^\[\]\n]{0,300}\]?\]")


# While the reply streams, text shows only once it is this long: a decline phrase that
# starts within DECLINE_LEAD characters (which makes the whole reply a decline) has ended
# by then. The validator releases text the moment its first citation arrives, so
# "[1] NOT" would otherwise show before "COVERED" comes.
HOLD_CHARS = DECLINE_LEAD + 30


def looks_answered(text: str, final: bool = False) -> bool:
    """Whether the text so far says something and is no decline, so it may start
    showing: a small model's "[1] NOT COVERED [2] ..." cites, and must not flash up.
    Before the reply is ``final``, a text shorter than HOLD_CHARS waits."""
    letters = re.sub(r"\W+", "", _MARKER.sub(" ", text))
    if not final and len(text) < HOLD_CHARS:
        return False
    return len(letters) >= MIN_ANSWER_CHARS and not declines(text)


class JsonStringField:
    """Pulls one string field (``"markdown"``, ``"answer"``) out of streaming JSON, so the
    answer text can be validated and shown before the JSON is complete. Each character
    is decoded once (linear in the answer's length)."""

    def __init__(self, key: str = "markdown") -> None:
        self.key = f'"{key}"'
        self.raw = ""
        self.start: int | None = None
        self.pos = 0  # where in raw the next undecoded character of the string is
        self.closed = False

    def feed(self, chunk: str) -> str:
        self.raw += chunk
        if self.closed:
            return ""
        if self.start is None:
            key = self.raw.find(self.key)
            if key < 0:
                return ""
            colon = self.raw.find(":", key + len(self.key))
            quote = self.raw.find('"', colon + 1) if colon >= 0 else -1
            if quote < 0:
                return ""
            self.start = self.pos = quote + 1
        end = self._complete(self.pos)
        piece, self.pos = self.raw[self.pos : end], end
        try:
            return str(json.loads('"' + piece + '"'))
        except ValueError:
            return ""

    def _complete(self, i: int) -> int:
        """The end of the string's complete characters from ``i`` (an escape is taken
        whole, a surrogate pair's halves together); sets `closed` at the closing quote."""
        body = self.raw
        end = i
        while i < len(body):
            c = body[i]
            if c == "\\":
                need = 6 if body[i + 1 : i + 2] == "u" else 2
                if i + need > len(body):
                    break
                if need == 6 and "\\ud800" <= body[i : i + 6].lower() <= "\\udbff":
                    if i + 12 > len(body):
                        break  # a high surrogate waits for its low half
                    i += 6
                i += need
                end = i
                continue
            if c == '"':
                self.closed = True
                break
            i += 1
            end = i
        return end


class TextRouter:
    """Splits a reply's text into prose and a tool call (or JSON answer) written as text.

    Decided line by line, outside code fences: a line that starts with ``{`` or
    ``<tool_call>``, or a fence whose first line starts with ``{``, begins the JSON;
    everything from there on is JSON. A line is held only while its first characters
    could still begin one, so prose flows at once."""

    def __init__(self) -> None:
        self.held = ""  # the start of a line not yet decided
        self.line_start = True
        self.fence = ""  # the open fence's marker, in prose
        self.fence_line = ""  # a fence opener waiting for its next line
        self.diverted = False

    def feed(self, text: str) -> tuple[str, str]:
        """(prose, json) in ``text``, given everything fed before."""
        if self.diverted:
            return "", text
        prose: list[str] = []
        buffer = self.held + text
        self.held = ""
        i = 0
        while i < len(buffer):
            if not self.line_start:
                newline = buffer.find("\n", i)
                if newline < 0:
                    prose.append(buffer[i:])
                    break
                prose.append(buffer[i : newline + 1])
                i = newline + 1
                self.line_start = True
                continue
            newline = buffer.find("\n", i)
            line = buffer[i:] if newline < 0 else buffer[i : newline + 1]
            verdict = self._judge(line, complete=newline >= 0)
            if verdict == "wait":
                self.held = buffer[i:]
                break
            if verdict == "json":
                self.diverted = True
                return "".join(prose), self.fence_line + buffer[i:]
            if self.fence_line:
                prose.append(self.fence_line)
                self.fence_line = ""
            if verdict == "fence-open":
                self.fence_line = line
                i += len(line)
                continue
            prose.append(line)
            i += len(line)
            self.line_start = line.endswith("\n")
        return "".join(prose), ""

    def _judge(self, line: str, complete: bool) -> str:
        """"prose", "json", "wait" (not yet known) or "fence-open" (a fence opener held
        until its first line shows whether it holds JSON)."""
        stripped = line.lstrip()
        if self.fence:
            if stripped.startswith(self.fence):
                self.fence = ""
            return "prose"
        if not stripped.strip():
            return "prose" if complete else "wait"
        if self.fence_line:
            if stripped.startswith("{"):
                return "json"
            self.fence = self.fence_line.lstrip()[:3]
            return "prose"
        if any(stripped.startswith(o) for o in _CALL_OPENERS):
            return "json"
        if any(o.startswith(stripped.rstrip("\n")) for o in _CALL_OPENERS[:1]) and not complete:
            return "wait"
        if stripped.startswith(("```", "~~~")):
            return "fence-open" if complete else "wait"
        if not complete and len(stripped) < 3 and stripped[0] in "`~<":
            return "wait"
        return "prose"

    def rest(self) -> tuple[str, str]:
        """What is still held when the reply ends."""
        held, fence, self.held, self.fence_line = self.held, self.fence_line, "", ""
        if self.diverted:
            return "", held
        return fence + held, ""


Emit = Callable[[Piece], Awaitable[None]]


def _merged(pieces: list[Piece]) -> Piece:
    return Piece(
        "".join(p.markdown for p in pieces),
        [b for p in pieces for b in p.blocks],
        list(pieces[-1].draft),
    )


class ReplyStream:
    """Routes one call's deltas through the validators (see the module docstring)."""

    def __init__(
        self,
        call_stream: StreamValidator,
        prose_stream: StreamValidator | None,
        emit: Emit,
        json_key: str = "markdown",
        grounded: Callable[[str], bool] | None = None,
    ) -> None:
        self.grounded = grounded  # whether the text so far may be shown (None: always)
        self.call_stream = call_stream
        self.prose_stream = prose_stream
        self.emit = emit
        self.tool_field = JsonStringField("markdown")
        self.text_field = JsonStringField(json_key)
        self.router = TextRouter()
        self.owner = ""  # "call" or "prose" once one has shown text
        self.text = {"call": "", "prose": ""}  # what each channel's validator was fed
        self.held: dict[str, list[Piece]] = {"call": [], "prose": []}

    async def on_delta(self, kind: str, text: str) -> None:
        if kind == "tool:answer":
            await self._feed("call", self.tool_field.feed(text))
        elif kind == "text":
            prose, json_text = self.router.feed(text)
            if json_text:
                await self._feed("call", self.text_field.feed(json_text))
            if prose:
                await self._feed("prose", prose)

    async def _feed(self, channel: str, text: str) -> None:
        stream = self.call_stream if channel == "call" else self.prose_stream
        if stream is None or not text:
            return
        self.text[channel] += text
        # Off the event loop: other requests are served while it validates.
        shown = await asyncio.to_thread(stream.feed, text)
        await self._show(channel, shown)

    async def _show(self, channel: str, piece: Piece | None, final: bool = False) -> None:
        if self.owner not in ("", channel):
            return
        held = self.held[channel]
        if piece is not None:
            held.append(piece)
        if not held:
            return
        text = self.text[channel]
        if not looks_answered(text, final) or (
            self.grounded is not None and not self.grounded(text)
        ):
            return
        self.owner = channel
        self.held[channel] = []
        await self.emit(_merged(held))

    async def finish(self, channel: str) -> None:
        """The reply ended and ``channel`` holds the answer: flush what the router held,
        then show the rest of that channel's validated text if it owns the stream."""
        prose, json_text = self.router.rest()
        if json_text:
            await self._feed("call", self.text_field.feed(json_text))
        if prose:
            await self._feed("prose", prose)
        stream = self.call_stream if channel == "call" else self.prose_stream
        if stream is None:
            return
        rest = await asyncio.to_thread(stream.finish)
        if self.owner in ("", channel):
            await self._show(channel, rest, final=True)
