"""Server-sent events read off a streamed HTTP response, under first-event and idle deadlines.

httpx's read timeout restarts on every byte, so a hosted router that sends ``: keep-alive``
comments while a request waits in its queue (or a server that only sends ``ping`` events)
holds a turn open for ever. The deadlines here count only events that carry the reply:
comments and pings are idle time.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import httpx

KEEPALIVE_EVENTS = frozenset({"ping"})  # Anthropic's keep-alive event


@dataclass(frozen=True)
class ServerSentEvent:
    event: str  # "message" when the server named none
    data: str


@dataclass(frozen=True)
class StreamDeadlines:
    """How long a stream may go without a reply event, from `sent_at` (a loop time)."""

    first_event: float  # seconds from the request to the first event (setting first_token_timeout)
    idle: float  # seconds between events after that (setting idle_timeout)
    sent_at: float


class StreamStalled(Exception):
    """No reply event within a deadline; `setting` names it and `seconds` its value."""

    def __init__(self, setting: str, seconds: float) -> None:
        super().__init__(f"no reply event for {seconds:g}s (setting {setting})")
        self.setting = setting
        self.seconds = seconds


async def server_sent_events(
    response: httpx.Response,
    deadlines: StreamDeadlines | None = None,
    carries_reply: Callable[[ServerSentEvent], bool] | None = None,
) -> AsyncIterator[ServerSentEvent]:
    """The events of a text/event-stream body (comments and id/retry fields skipped).

    With `deadlines`, raises StreamStalled when the first event, or the next one, is
    late; keep-alive comments and ``ping`` events do not count as events for them, nor
    does any event `carries_reply` says is not part of the reply (a role-only chunk sent
    before the model has read the prompt).
    """
    loop = asyncio.get_running_loop()
    due, setting, seconds = None, "", 0.0
    if deadlines is not None:
        due = deadlines.sent_at + deadlines.first_event
        setting, seconds = "first_token_timeout", deadlines.first_event
    lines = aiter(response.aiter_lines())
    event, data = "", list[str]()
    while True:
        try:
            async with asyncio.timeout_at(due):
                line = await anext(lines)
        except StopAsyncIteration:
            break
        except TimeoutError:
            raise StreamStalled(setting, seconds) from None
        if not line:
            if data:
                name = event or "message"
                sse = ServerSentEvent(name, "\n".join(data))
                if (
                    deadlines is not None
                    and name not in KEEPALIVE_EVENTS
                    and (carries_reply is None or carries_reply(sse))
                ):
                    due = loop.time() + deadlines.idle
                    setting, seconds = "idle_timeout", deadlines.idle
                yield sse
            event, data = "", []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
    if data:  # a last event without its blank line: the vendors' parsers keep it too
        yield ServerSentEvent(event or "message", "\n".join(data))
