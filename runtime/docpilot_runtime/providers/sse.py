"""Server-sent events read off a streamed HTTP response."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx


@dataclass(frozen=True)
class ServerSentEvent:
    event: str  # "message" when the server named none
    data: str


async def server_sent_events(response: httpx.Response) -> AsyncIterator[ServerSentEvent]:
    """The events of a text/event-stream body (comments and id/retry fields skipped)."""
    event, data = "", list[str]()
    async for line in response.aiter_lines():
        if not line:
            if data:
                yield ServerSentEvent(event or "message", "\n".join(data))
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
