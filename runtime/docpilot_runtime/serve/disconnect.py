"""Stopping a turn when its reader goes away, for plain JSON and for SSE.

Starlette notices a vanished client only when it next writes to it (ASGI 2.4), and a
JSON turn writes nothing until its end, nor does an SSE turn while the model is still
streaming text that is not yet shown. Meanwhile the provider keeps generating (and
billing) into a connection the pool cannot reuse; ~100 such turns filled httpx's pool and
every later turn degraded to `passages`. So each /api/ask turn runs beside a watcher of
the ASGI ``receive`` channel, and ``http.disconnect`` cancels the turn: the cancellation
closes the provider's streamed response, which returns its connection to the pool and
tells the provider to stop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any, TypeVar

from starlette.types import Receive

log = logging.getLogger("docpilot.app")

T = TypeVar("T")


async def wait_for_disconnect(receive: Receive) -> None:
    """Return once the client has gone away (the request body must already be read)."""
    while (await receive())["type"] != "http.disconnect":
        pass


def cancel_on_disconnect(receive: Receive, task: asyncio.Task[Any]) -> asyncio.Task[None]:
    """Watch `receive` and cancel `task` when the client goes away; cancel the returned
    watcher once `task` is done with the response."""

    async def watch() -> None:
        await wait_for_disconnect(receive)
        if not task.done():
            log.info("turn cancelled: the reader went away")
            cancel_once(task)

    return asyncio.create_task(watch())


async def unless_disconnected(receive: Receive, work: Coroutine[Any, Any, T]) -> T | None:
    """`work`'s result, or None when the client went away first (`work` is cancelled)."""
    task = asyncio.create_task(work)
    watcher = cancel_on_disconnect(receive, task)
    try:
        # asyncio.wait, not `await task`: a cancel of ours reaches the turn once, below.
        await asyncio.wait({task})
    except asyncio.CancelledError:
        cancel_once(task)
        raise
    finally:
        watcher.cancel()
    if task.cancelled():
        return None
    return task.result()


def cancel_once(task: asyncio.Task[Any]) -> None:
    """Cancel `task` unless it is done or already being cancelled (a second cancel would
    interrupt the clean-up the first one started)."""
    if not task.done() and not task.cancelling():
        task.cancel()
