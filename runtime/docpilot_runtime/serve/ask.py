"""`POST /api/ask`: check the request, admit it past the rate caps, run the turn, and write
its result as JSON or as Server-Sent Events (progress while it runs, `answer` last).

Privacy rule: the question, the quote and the history never reach a log line or a
response header; a pasted credential is part of the question, so the same rule keeps it
out. Over a cap: 429 with Retry-After, no model call; past the daily spend cap a turn
settles as `passages` with `fallback_reason`."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.types import Receive

from docpilot_runtime.limits.caps import Caps
from docpilot_runtime.serve.disconnect import cancel_on_disconnect, cancel_once, unless_disconnected
from docpilot_runtime.serve.highlight import highlight_result
from docpilot_runtime.serve.requests import (
    GENERIC_FAILURE,
    HTTPRequestError,
    caps_of,
    client_of,
    error_response,
    log_failure,
    read_json,
    runtime_of,
)
from docpilot_runtime.serve.root_path import path_below
from docpilot_runtime.shared.types import (
    AskRequest,
    RequestError,
    Result,
    parse_ask_request,
)
from docpilot_runtime.turn import Event, EventSink, Runtime

log = logging.getLogger("docpilot.app")

SSE_HEADERS = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
CLIENT_CLOSED_REQUEST = 499  # the status nginx logs for a client that left mid-request



def log_turn(result: Result, seconds: float) -> None:
    """The one line a turn leaves in the log: identifiers and numbers, never text."""
    # The cost stays here for the owner even when results do not publish `usage`.
    cost = int(result.usage.get("cost_micro_usd") or 0) if result.usage else 0
    log.info(
        "turn %s kind=%s confidence=%s retriever=%s duration_ms=%.1f cost_micro_usd=%d%s",
        result.turn_id,
        result.kind,
        result.confidence,
        result.retriever,
        seconds * 1000,
        cost,
        f" fallback={result.fallback_reason}" if result.fallback_reason else "",
    )


async def answer_turn(
    runtime: Runtime, request: AskRequest, emit: EventSink | None, caps: Caps | None = None
) -> Result:
    """Run one turn through the runtime and log it; exceptions propagate to the caller,
    which answers with a generic error. With ``caps``, a turn past the daily spend cap
    runs without models (each model call of a turn holds and settles its cost through the
    runtime's caps as it runs)."""
    started = time.perf_counter()
    over_budget = caps is not None and await caps.spend_exhausted()
    if over_budget:
        result = await runtime.ask(request, emit, models=False)
    else:
        result = await runtime.ask(request, emit)
    if over_budget and result.kind == "passages":
        result.fallback_reason = "spend_cap"
        if runtime.metrics is not None:
            runtime.metrics.cap_hit("spend")
    log_turn(result, time.perf_counter() - started)
    return result


def public_result(runtime: Runtime, result: Result) -> dict[str, Any]:
    """The result as it goes on the wire: code blocks carry the site's highlighting."""
    return highlight_result(result.public_dict(runtime.settings.caps.public_usage))


def sse(event: Event) -> str:
    """One Server-Sent Event: ``event: NAME`` and a single-line JSON ``data``."""
    data = json.dumps(event.data, ensure_ascii=False, separators=(",", ":"))
    return f"event: {event.name}\ndata: {data}\n\n"


# An SSE comment after this much silence: while a model reads the prompt (a CPU model:
# minutes) the reader's widget, which gives up after 60 s of silence, and any proxy that
# drops idle connections see that the turn is alive.
KEEPALIVE_SECONDS = 15.0


async def stream_turn(
    runtime: Runtime, request: AskRequest, receive: Receive, caps: Caps | None = None
) -> AsyncIterator[str]:
    """The turn as SSE: events the runtime emits go onto a queue this generator drains,
    so `progress` reaches the reader while the turn is still running; `answer` (or
    `error`) is always the last event; a comment line after KEEPALIVE_SECONDS of silence.
    A reader who goes away cancels the turn."""
    queue: asyncio.Queue[Event | None] = asyncio.Queue()

    async def emit(event: Event) -> None:
        if event.name == "delta":  # streamed code is highlighted as the final answer's
            event = Event(event.name, highlight_result(event.data))
        await queue.put(event)

    async def run() -> None:
        try:
            result = await answer_turn(runtime, request, emit, caps)
            await queue.put(Event("answer", public_result(runtime, result)))
        except Exception as exc:
            log_failure(exc)
            await queue.put(Event("error", {"status": 500, "message": GENERIC_FAILURE}))
        finally:
            await queue.put(None)

    task = asyncio.create_task(run())
    watcher = cancel_on_disconnect(receive, task)
    try:
        while True:
            try:
                event = await asyncio.wait_for(queue.get(), KEEPALIVE_SECONDS)
            except TimeoutError:
                yield ": keep-alive\n\n"
                continue
            if event is None:
                break
            yield sse(event)
    finally:
        # The reader went away mid-turn: stop the turn rather than finish it for nobody.
        watcher.cancel()
        cancel_once(task)
        await asyncio.wait({task})


def wants_stream(request: Request) -> bool:
    return "text/event-stream" in request.headers.get("accept", "").lower()


def rate_limited(retry_after: int, cap: str) -> JSONResponse:
    """429 naming the cap; Retry-After in whole seconds."""
    body = {
        "error": {
            "status": 429,
            "field": "rate",
            "message": f"too many questions ({cap} cap); try again in {retry_after} s",
            "retry_after": retry_after,
        }
    }
    return JSONResponse(body, 429, headers={"Retry-After": str(retry_after)})


async def ask(request: Request) -> Response:
    """`POST /api/ask`: the result object as JSON, or the turn as an SSE stream."""
    runtime = runtime_of(request)
    limits = runtime.settings.limits
    seconds = runtime.settings.caps.body_read_seconds
    try:
        body = await read_json(request, limits.max_body_bytes, seconds)
        ask_request = parse_ask_request(body, limits)
    except HTTPRequestError as exc:
        return error_response(exc, exc.status)
    except RequestError as exc:
        return error_response(exc, 400)
    root: str = request.app.state.root_path
    if root:  # the reader's page as the bundle knows it, without the --root-path prefix
        page = ask_request.page and path_below(ask_request.page, root)
        ask_request = replace(ask_request, page=page)
    caps = caps_of(request)
    admission = await caps.admit(runtime.site_for(ask_request.page).prefix, client_of(request))
    if not admission.allowed:
        if runtime.metrics is not None:
            runtime.metrics.cap_hit(admission.cap)
        return rate_limited(admission.retry_after, admission.cap)
    if wants_stream(request):
        return StreamingResponse(
            stream_turn(runtime, ask_request, request.receive, caps),
            media_type="text/event-stream",
            headers=SSE_HEADERS,
        )
    try:
        result = await unless_disconnected(
            request.receive, answer_turn(runtime, ask_request, None, caps)
        )
    except Exception as exc:
        log_failure(exc)
        return JSONResponse({"error": {"status": 500, "message": GENERIC_FAILURE}}, 500)
    if result is None:  # nobody is left to read it
        return Response(status_code=CLIENT_CLOSED_REQUEST)
    return JSONResponse(public_result(runtime, result), headers={"Cache-Control": "no-store"})


