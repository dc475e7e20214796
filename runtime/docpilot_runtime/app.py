"""The Starlette app: the built site as static files plus the API (`/api/ask`,
`/api/health`, `/api/feedback`).

The runtime is loaded once, when the app is created, so a bad bundle stops
`docpilot serve` at startup with the file and field named instead of failing the
first reader. Handlers are I/O only: they check the request, hand an `AskRequest` to
`Runtime.ask` and write its result as JSON or as Server-Sent Events.

Privacy rule for everything here: the question, the quote, the history and the
feedback note never reach a log line or a response header; a pasted credential is
part of the question, so the same rule keeps it out.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import mimetypes
import os
import re
import time
import traceback
from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

from . import precompressed
from .settings import Settings
from .turn import Event, EventSink, Runtime, load_runtime
from .types import AskRequest, RequestError, Result, parse_ask_request

log = logging.getLogger("docpilot.app")

# Feedback kept per turn in memory until records land; bounded so a flood of
# made-up turn ids cannot grow the process without limit.
FEEDBACK_CAPACITY = 10_000
MAX_REASONS = 10
MAX_REASON_CHARS = 40
MAX_NOTE_CHARS = 1000
MAX_TURN_ID_CHARS = 64
TURN_ID_SHAPE = re.compile(r"[A-Za-z0-9_-]+")
FEEDBACK_BODY_BYTES = 16_384

# Browsers refuse to compile WebAssembly streamed with any other type, and module
# workers need a JavaScript type; the platform's mimetypes table may know neither.
STATIC_TYPES = {".wasm": "application/wasm", ".mjs": "text/javascript"}

SSE_HEADERS = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
GENERIC_FAILURE = "Something went wrong while answering; please try again."


class SiteFiles(StaticFiles):
    """StaticFiles with the content types the widget's Pyodide worker needs, sending a
    file's precompressed .br/.gz sibling when the browser accepts it (`precompressed`)."""

    def file_response(
        self,
        full_path: str | os.PathLike[str],
        stat_result: os.stat_result,
        scope: Scope,
        status_code: int = 200,
    ) -> Response:
        accept = Headers(scope=scope).get("accept-encoding", "")
        variant = precompressed.choose(Path(full_path), stat_result, accept)
        response = super().file_response(variant.path, variant.stat, scope, status_code)
        if variant.encoding and "content-type" in response.headers:
            guessed = mimetypes.guess_type(str(full_path))[0] or "application/octet-stream"
            response.headers["content-type"] = guessed
            response.headers["content-encoding"] = variant.encoding
        if variant.varies:
            response.headers["vary"] = "Accept-Encoding"
        forced = STATIC_TYPES.get(Path(full_path).suffix.lower())
        if forced and "content-type" in response.headers:
            response.headers["content-type"] = forced
        return response


def error_response(error: RequestError, status: int) -> JSONResponse:
    """A 4xx JSON error naming the field and, where one applies, the limit."""
    return JSONResponse(error.to_dict(), status_code=status)


# ---------------------------------------------------------------- reading requests


class HTTPRequestError(RequestError):
    """A RequestError that also carries the HTTP status to answer with."""

    def __init__(self, status: int, field: str, message: str, limit: int | None = None) -> None:
        super().__init__(field, message, limit)
        self.status = status


class BodyTooLarge(Exception):
    """The request body passed the byte limit; reading stopped there."""


def is_json(request: Request) -> bool:
    """Whether the body is declared JSON (``application/json`` or a ``+json`` type), so
    a form post or a text/plain beacon is refused with 415 before anything is read."""
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


async def read_capped(request: Request, limit: int) -> bytes:
    """The body, read chunk by chunk and abandoned as soon as it passes ``limit`` bytes,
    so an oversized upload never sits whole in memory."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        chunks.append(chunk)
    return b"".join(chunks)


async def read_json(request: Request, limit: int) -> Any:
    """The decoded JSON body; raises RequestError (with the HTTP status to answer) for a
    wrong content type, an oversized body or malformed JSON."""
    if not is_json(request):
        raise HTTPRequestError(415, "body", "must be sent as Content-Type: application/json")
    try:
        raw = await read_capped(request, limit)
    except BodyTooLarge:
        raise HTTPRequestError(413, "body", "is over the size limit in bytes", limit) from None
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        # The position only: the decoder's message never quotes the text itself.
        # (RecursionError: a few kilobytes of "[[[[" nest deeper than the stack.)
        where = getattr(exc, "pos", None)
        detail = f" (at character {where})" if where is not None else ""
        raise HTTPRequestError(400, "body", f"is not valid JSON{detail}") from None


# ---------------------------------------------------------------------- the turn


def log_turn(result: Result, seconds: float) -> None:
    """The one line a turn leaves in the log: identifiers and numbers, never text."""
    log.info(
        "turn %s kind=%s confidence=%s retriever=%s duration_ms=%.1f",
        result.turn_id,
        result.kind,
        result.confidence,
        result.retriever,
        seconds * 1000,
    )


def log_failure(exc: BaseException) -> None:
    """Where a turn failed, by exception type and code location only: an exception's
    message may carry the question (or a key pasted in it), so it is never logged."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "?"
    log.error("turn failed: %s at %s", type(exc).__name__, where)


async def answer_turn(runtime: Runtime, request: AskRequest, emit: EventSink | None) -> Result:
    """Run one turn through the runtime and log it; exceptions propagate to the caller,
    which answers with a generic error."""
    started = time.perf_counter()
    result = await runtime.ask(request, emit)
    log_turn(result, time.perf_counter() - started)
    return result


def sse(event: Event) -> str:
    """One Server-Sent Event: ``event: NAME`` and a single-line JSON ``data``."""
    data = json.dumps(event.data, ensure_ascii=False, separators=(",", ":"))
    return f"event: {event.name}\ndata: {data}\n\n"


async def stream_turn(runtime: Runtime, request: AskRequest) -> AsyncIterator[str]:
    """The turn as SSE: events the runtime emits go onto a queue this generator drains,
    so `progress` reaches the reader while the turn is still running; `answer` (or
    `error`) is always the last event."""
    queue: asyncio.Queue[Event | None] = asyncio.Queue()

    async def emit(event: Event) -> None:
        await queue.put(event)

    async def run() -> None:
        try:
            result = await answer_turn(runtime, request, emit)
            await queue.put(Event("answer", result.to_dict()))
        except Exception as exc:
            log_failure(exc)
            await queue.put(Event("error", {"status": 500, "message": GENERIC_FAILURE}))
        finally:
            await queue.put(None)

    task = asyncio.create_task(run())
    try:
        while (event := await queue.get()) is not None:
            yield sse(event)
    finally:
        # The reader went away mid-turn: stop the turn rather than finish it for nobody.
        if not task.done():
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def wants_stream(request: Request) -> bool:
    return "text/event-stream" in request.headers.get("accept", "").lower()


# ---------------------------------------------------------------------- feedback


@dataclass(frozen=True)
class Feedback:
    turn_id: str
    rating: Literal["up", "down"]
    reasons: tuple[str, ...] = ()
    note: str = ""


def parse_feedback(body: Any) -> Feedback:
    """Check a decoded `POST /api/feedback` body; errors name the field and the limit."""
    if not isinstance(body, dict):
        raise RequestError("body", "must be a JSON object")
    unknown = set(body) - {"turn_id", "rating", "reasons", "note"}
    if unknown:
        raise RequestError(sorted(unknown)[0], "is not a known field")
    turn_id = body.get("turn_id")
    if not isinstance(turn_id, str):
        raise RequestError("turn_id", "must be a string")
    if len(turn_id) > MAX_TURN_ID_CHARS:
        raise RequestError("turn_id", "is over the limit", MAX_TURN_ID_CHARS)
    # The turn id is logged; this shape keeps newlines and pasted text out of the log.
    if not TURN_ID_SHAPE.fullmatch(turn_id):
        raise RequestError("turn_id", "must be letters, digits, '-' or '_'")
    rating = body.get("rating")
    if rating not in ("up", "down"):
        raise RequestError("rating", 'must be "up" or "down"')
    # Absent and null mean "none"; a present value of another type is an error, not [].
    reasons = body.get("reasons")
    reasons = [] if reasons is None else reasons
    if not isinstance(reasons, list):
        raise RequestError("reasons", "must be a list of strings")
    if len(reasons) > MAX_REASONS:
        raise RequestError("reasons", f"has {len(reasons)} items, over the limit", MAX_REASONS)
    for i, reason in enumerate(reasons):
        if not isinstance(reason, str):
            raise RequestError(f"reasons[{i}]", "must be a string")
        if len(reason) > MAX_REASON_CHARS:
            raise RequestError(f"reasons[{i}]", "is over the limit", MAX_REASON_CHARS)
    note = body.get("note")
    note = "" if note is None else note
    if not isinstance(note, str):
        raise RequestError("note", "must be a string")
    if len(note) > MAX_NOTE_CHARS:
        raise RequestError("note", f"is {len(note)} characters, over the limit", MAX_NOTE_CHARS)
    return Feedback(turn_id=turn_id, rating=rating, reasons=tuple(reasons), note=note)


class FeedbackStore:
    """The latest feedback per turn, oldest turns dropped past ``capacity``."""

    def __init__(self, capacity: int = FEEDBACK_CAPACITY) -> None:
        self.capacity = capacity
        self._items: OrderedDict[str, Feedback] = OrderedDict()

    def put(self, feedback: Feedback) -> None:
        self._items[feedback.turn_id] = feedback
        self._items.move_to_end(feedback.turn_id)
        while len(self._items) > self.capacity:
            self._items.popitem(last=False)

    def get(self, turn_id: str) -> Feedback | None:
        return self._items.get(turn_id)

    def __len__(self) -> int:
        return len(self._items)


# ---------------------------------------------------------------------- handlers


def runtime_of(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


async def ask(request: Request) -> Response:
    """`POST /api/ask`: the result object as JSON, or the turn as an SSE stream."""
    runtime = runtime_of(request)
    limits = runtime.settings.limits
    try:
        ask_request = parse_ask_request(await read_json(request, limits.max_body_bytes), limits)
    except HTTPRequestError as exc:
        return error_response(exc, exc.status)
    except RequestError as exc:
        return error_response(exc, 400)
    if wants_stream(request):
        return StreamingResponse(
            stream_turn(runtime, ask_request), media_type="text/event-stream", headers=SSE_HEADERS
        )
    try:
        result = await answer_turn(runtime, ask_request, None)
    except Exception as exc:
        log_failure(exc)
        return JSONResponse({"error": {"status": 500, "message": GENERIC_FAILURE}}, 500)
    return JSONResponse(result.to_dict(), headers={"Cache-Control": "no-store"})


async def health(request: Request) -> Response:
    """`GET /api/health`: what is loaded (bundle hash, units, embedder, mode)."""
    return JSONResponse(runtime_of(request).health(), headers={"Cache-Control": "no-store"})


async def feedback(request: Request) -> Response:
    """`POST /api/feedback`: a rating for a turn, kept in memory; 204 on success."""
    try:
        item = parse_feedback(await read_json(request, FEEDBACK_BODY_BYTES))
    except HTTPRequestError as exc:
        return error_response(exc, exc.status)
    except RequestError as exc:
        return error_response(exc, 400)
    store: FeedbackStore = request.app.state.feedback
    store.put(item)
    # Rating and counts only: reasons are free strings and the note is the reader's text.
    log.info("feedback %s rating=%s reasons=%d", item.turn_id, item.rating, len(item.reasons))
    return Response(status_code=204)


# ---------------------------------------------------------------------- the app


async def http_error(request: Request, exc: Exception) -> Response:
    """Routing errors (404, 405) as JSON under /api, as plain text for site pages."""
    assert isinstance(exc, HTTPException)
    if request.url.path.startswith("/api/"):
        field = "method" if exc.status_code == 405 else "path"
        body = {"error": {"field": field, "message": exc.detail}}
        return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)
    return PlainTextResponse(exc.detail, status_code=exc.status_code, headers=exc.headers)


def build_app(runtime: Runtime, site_dir: str | os.PathLike[str]) -> Starlette:
    """The app around an already loaded runtime (tests can share one runtime)."""
    settings = runtime.settings
    api = [
        Route("/ask", ask, methods=["POST"]),
        Route("/health", health, methods=["GET"]),
        Route("/feedback", feedback, methods=["POST"]),
    ]
    # /api is its own mount so an unknown API path is a 404 and a wrong method a 405
    # there, instead of falling through to the static files.
    routes = [
        Mount("/api", routes=api),
        Mount("/", app=SiteFiles(directory=Path(site_dir), html=True), name="site"),
    ]
    # No origins configured: no CORS headers at all, so browsers keep it same-origin.
    middleware = [
        Middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["Content-Type"],
        )
    ]

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        yield
        await runtime.aclose()  # the providers' connection pools

    app = Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={HTTPException: http_error},
        lifespan=lifespan,
    )
    app.state.runtime = runtime
    app.state.feedback = FeedbackStore()
    return app


def create_app(site_dir: str | os.PathLike[str], settings: Settings | None = None) -> Starlette:
    """Load every bundle under ``site_dir`` once and serve the site and the API.

    A bad bundle raises `BundleError` here, naming the file and the field, so a
    deployment fails at startup rather than on its first reader."""
    runtime = load_runtime(Path(site_dir), settings or Settings())
    return build_app(runtime, site_dir)


__all__ = ["FeedbackStore", "build_app", "create_app", "parse_feedback"]
