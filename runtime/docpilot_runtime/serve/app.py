"""The Starlette app: the built site as static files plus the API (`/api/ask`,
`/api/health`, `/api/feedback`, and `/api/bundle/reload` when `[bundle]` names a reload
secret: see `bundle_swap`).

The runtime is loaded once, when the app is created, so a bad bundle stops
`docpilot serve` at startup with the file and field named instead of failing the
first reader. Handlers are I/O only: they check the request, hand an `AskRequest` to
`Runtime.ask` and write its result as JSON or as Server-Sent Events.

Privacy rule for everything here: the question, the quote, the history and the
feedback note never reach a log line or a response header; a pasted credential is
part of the question, so the same rule keeps it out.

Abuse rules: `/api/ask` counts every accepted question against the rate caps of
`caps.py` (in memory, or `caps_shared` with `[limits] shared`) before the turn starts
(over a cap: 429 with Retry-After, no model call), and past the daily spend cap turns
settle as `passages` with `fallback_reason`. Every
response carries the headers of `security_headers.py`; dotfiles are never served.
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
from dataclasses import dataclass, replace
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
from starlette.types import ASGIApp, Receive, Scope, Send

from docpilot_runtime.limits.caps import Caps, MemoryCaps, client_address
from docpilot_runtime.limits.shared import DatabaseCaps
from docpilot_runtime.records import FeedbackRecord, Recorder
from docpilot_runtime.records.outbox import outbox_depth
from docpilot_runtime.screen.credentials import find_credential
from docpilot_runtime.serve import precompressed
from docpilot_runtime.serve.bundle_swap import (
    RELOAD_PATH,
    BundleSwapper,
    reload_endpoint,
    reload_secret,
)
from docpilot_runtime.serve.disconnect import cancel_on_disconnect, cancel_once, unless_disconnected
from docpilot_runtime.serve.highlight import highlight_result
from docpilot_runtime.serve.mcp import MCP_PATH, http_mount
from docpilot_runtime.serve.metrics import CONTENT_TYPE, CountedProvider, RuntimeMetrics, authorized
from docpilot_runtime.serve.root_path import RootPath, normalise_root_path, path_below
from docpilot_runtime.serve.security_headers import SecurityHeaders
from docpilot_runtime.settings.load import Settings
from docpilot_runtime.shared.types import (
    AskRequest,
    RequestError,
    Result,
    check_text,
    decode_int,
    parse_ask_request,
)
from docpilot_runtime.turn import Event, EventSink, Runtime, load_runtime

log = logging.getLogger("docpilot.app")

# Feedback kept per turn in memory until records land; bounded so a flood of
# made-up turn ids cannot grow the process without limit, and per client so one
# client's flood evicts only its own older feedback, never another reader's.
FEEDBACK_CAPACITY = 10_000
FEEDBACK_PER_CLIENT = 50
MAX_REASONS = 10
MAX_REASON_CHARS = 40
# The reason tags a thumbs-down may carry (the widget offers the first three).
REASON_TAGS = ("incorrect", "incomplete", "unclear", "outdated", "off_topic", "other")
MAX_NOTE_CHARS = 1000
MAX_TURN_ID_CHARS = 64
TURN_ID_SHAPE = re.compile(r"[A-Za-z0-9_-]+")
FEEDBACK_BODY_BYTES = 16_384
# Deeper than any valid request (history items are objects in a list: depth 3).
MAX_JSON_DEPTH = 16
_JSON_NESTING = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')

# Browsers refuse to compile WebAssembly streamed with any other type, and module
# workers need a JavaScript type; the platform's mimetypes table may know neither.
STATIC_TYPES = {".wasm": "application/wasm", ".mjs": "text/javascript"}

SSE_HEADERS = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
CLIENT_CLOSED_REQUEST = 499  # the status nginx logs for a client that left mid-request
SETTLE_SECONDS = 10.0  # at shutdown, how long second opinions may still finish
GENERIC_FAILURE = "Something went wrong while answering; please try again."


class SiteFiles(StaticFiles):
    """StaticFiles with the content types the widget's Pyodide worker needs, sending a
    file's precompressed .br/.gz sibling when the browser accepts it (`precompressed`),
    that never serves a dotfile or anything under a dot-directory (`.env`, `.git/config`,
    an editor's swap file left in the site dir). Paths outside the directory are already
    refused by StaticFiles, symlinks included."""

    def lookup_path(self, path: str) -> tuple[str, os.stat_result | None]:
        parts = re.split(r"[/\\]", path)
        # "." is the site root itself; ".." is StaticFiles' to refuse (outside the dir).
        if any(part.startswith(".") and part not in (".", "..") for part in parts):
            return "", None
        return super().lookup_path(path)

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


def json_depth(raw: bytes) -> int:
    """How deep the brackets of a JSON text nest (strings skipped), in one linear pass,
    so a deeply nested body is refused before the decoder recurses into it."""
    depth = deepest = 0
    for match in _JSON_NESTING.finditer(raw):
        token = match.group()
        if token in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
        elif token in (b"]", b"}"):
            depth -= 1
    return deepest


async def read_json(request: Request, limit: int, seconds: float = 10.0) -> Any:
    """The decoded JSON body; raises RequestError (with the HTTP status to answer) for a
    wrong content type, an oversized, slow or too deeply nested body, or malformed JSON."""
    if not is_json(request):
        raise HTTPRequestError(415, "body", "must be sent as Content-Type: application/json")
    try:
        # A client trickling its body would otherwise hold the connection forever.
        async with asyncio.timeout(seconds):
            raw = await read_capped(request, limit)
    except BodyTooLarge:
        raise HTTPRequestError(413, "body", "is over the size limit in bytes", limit) from None
    except TimeoutError:
        raise HTTPRequestError(
            408, "body", f"was not received within {seconds:g} seconds"
        ) from None
    if json_depth(raw) > MAX_JSON_DEPTH:
        raise HTTPRequestError(400, "body", "nests deeper than the limit", MAX_JSON_DEPTH)
    try:
        return json.loads(raw, parse_int=decode_int)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        # The position only: the decoder's message never quotes the text itself.
        # (RecursionError: a few kilobytes of "[[[[" nest deeper than the stack.)
        where = getattr(exc, "pos", None)
        detail = f" (at character {where})" if where is not None else ""
        raise HTTPRequestError(400, "body", f"is not valid JSON{detail}") from None


# ---------------------------------------------------------------------- the turn


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


def log_failure(exc: BaseException) -> None:
    """Where a turn failed, by exception type and code location only: an exception's
    message may carry the question (or a key pasted in it), so it is never logged."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "?"
    log.error("turn failed: %s at %s", type(exc).__name__, where)


async def answer_turn(
    runtime: Runtime, request: AskRequest, emit: EventSink | None, caps: Caps | None = None
) -> Result:
    """Run one turn through the runtime and log it; exceptions propagate to the caller,
    which answers with a generic error. With ``caps``, a turn past the daily spend cap
    runs without models and its cost is added to the day's spend."""
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
    if caps is not None and result.usage:
        await caps.record_spend(int(result.usage.get("cost_micro_usd") or 0))
    log_turn(result, time.perf_counter() - started)
    return result


def public_result(runtime: Runtime, result: Result) -> dict[str, Any]:
    """The result as it goes on the wire: code blocks carry the site's highlighting."""
    return highlight_result(result.public_dict(runtime.settings.caps.public_usage))


def sse(event: Event) -> str:
    """One Server-Sent Event: ``event: NAME`` and a single-line JSON ``data``."""
    data = json.dumps(event.data, ensure_ascii=False, separators=(",", ":"))
    return f"event: {event.name}\ndata: {data}\n\n"


async def stream_turn(
    runtime: Runtime, request: AskRequest, receive: Receive, caps: Caps | None = None
) -> AsyncIterator[str]:
    """The turn as SSE: events the runtime emits go onto a queue this generator drains,
    so `progress` reaches the reader while the turn is still running; `answer` (or
    `error`) is always the last event. A reader who goes away cancels the turn."""
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
        while (event := await queue.get()) is not None:
            yield sse(event)
    finally:
        # The reader went away mid-turn: stop the turn rather than finish it for nobody.
        watcher.cancel()
        cancel_once(task)
        await asyncio.wait({task})


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
        if reason not in REASON_TAGS:
            raise RequestError(f"reasons[{i}]", f"must be one of {', '.join(REASON_TAGS)}")
    note = body.get("note")
    note = "" if note is None else note
    if not isinstance(note, str):
        raise RequestError("note", "must be a string")
    if len(note) > MAX_NOTE_CHARS:
        raise RequestError("note", f"is {len(note)} characters, over the limit", MAX_NOTE_CHARS)
    for i, reason in enumerate(reasons):
        check_text(reason, f"reasons[{i}]")
    check_text(note, "note")
    return Feedback(turn_id=turn_id, rating=rating, reasons=tuple(reasons), note=note)


class FeedbackStore:
    """The latest feedback per turn, at most ``per_client`` turns per client address
    (a client's own oldest dropped first) and ``capacity`` in all (oldest dropped)."""

    def __init__(
        self, capacity: int = FEEDBACK_CAPACITY, per_client: int = FEEDBACK_PER_CLIENT
    ) -> None:
        self.capacity = capacity
        self.per_client = per_client
        self._items: OrderedDict[str, tuple[str, Feedback]] = OrderedDict()
        self._by_client: dict[str, OrderedDict[str, None]] = {}

    def _drop(self, turn_id: str) -> None:
        client, _ = self._items.pop(turn_id)
        turns = self._by_client[client]
        del turns[turn_id]
        if not turns:
            del self._by_client[client]

    def put(self, feedback: Feedback, client: str = "") -> None:
        if feedback.turn_id in self._items:
            self._drop(feedback.turn_id)
        self._items[feedback.turn_id] = (client, feedback)
        turns = self._by_client.setdefault(client, OrderedDict())
        turns[feedback.turn_id] = None
        while len(turns) > self.per_client:
            self._drop(next(iter(turns)))
        while len(self._items) > self.capacity:
            self._drop(next(iter(self._items)))

    def get(self, turn_id: str) -> Feedback | None:
        entry = self._items.get(turn_id)
        return entry[1] if entry else None

    def __len__(self) -> int:
        return len(self._items)


# ---------------------------------------------------------------------- handlers


def runtime_of(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


def caps_of(request: Request) -> Caps:
    caps: Caps = request.app.state.caps
    return caps


def client_of(request: Request) -> str:
    """The client address the caps count (X-Forwarded-For only from trusted proxies)."""
    peer = request.client.host if request.client else ""
    forwarded = request.headers.getlist("x-forwarded-for")
    return client_address(peer, forwarded, runtime_of(request).settings.caps.trusted_proxies)


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


async def health(request: Request) -> Response:
    """`GET /api/health`: what is loaded (bundle hash, units, embedder, mode)."""
    return JSONResponse(runtime_of(request).health(), headers={"Cache-Control": "no-store"})


async def feedback(request: Request) -> Response:
    """`POST /api/feedback`: a rating for a turn, kept in memory; 204 on success."""
    seconds = runtime_of(request).settings.caps.body_read_seconds
    try:
        item = parse_feedback(await read_json(request, FEEDBACK_BODY_BYTES, seconds))
    except HTTPRequestError as exc:
        return error_response(exc, exc.status)
    except RequestError as exc:
        return error_response(exc, 400)
    if item.note and find_credential(item.note) is not None:
        item = replace(item, note="")  # as a history item holding one: dropped, never kept
    store: FeedbackStore = request.app.state.feedback
    store.put(item, client_of(request))
    recorder = runtime_of(request).recorder
    if recorder is not None:  # kept with the turn; an unknown turn id stays in memory only
        now_ms = int(time.time() * 1000)
        await recorder.feedback(
            FeedbackRecord(item.turn_id, now_ms, item.rating, item.reasons, item.note)
        )
    # Rating and counts only: reasons are free strings and the note is the reader's text.
    log.info("feedback %s rating=%s reasons=%d", item.turn_id, item.rating, len(item.reasons))
    return Response(status_code=204)


def queue_depths(runtime: Runtime) -> dict[str, int | None]:
    """Entries waiting in the records spool and the webhook outbox (None: not known)."""
    recorder = runtime.recorder
    if recorder is None:
        return {}
    depths: dict[str, int | None] = {"spool": None, "outbox": None}
    with contextlib.suppress(Exception):  # a scrape never fails on a busy or absent database
        depths["spool"] = recorder.spool.depth()
    if recorder.webhooks is not None:
        with contextlib.suppress(Exception):
            depths["outbox"] = outbox_depth(recorder.store())
    return depths


def metrics_endpoint(metrics: RuntimeMetrics, token: str) -> Any:
    """`GET /metrics`: the Prometheus text format; 401 without the bearer token."""

    async def endpoint(request: Request) -> Response:
        if not authorized(request.headers.get("authorization", ""), token):
            return JSONResponse(
                {"error": {"status": 401, "field": "authorization",
                           "message": "a bearer token is required"}},
                401,
                headers={"WWW-Authenticate": "Bearer"},
            )
        body = await asyncio.to_thread(metrics.exposition)
        return Response(body, media_type=CONTENT_TYPE, headers={"Cache-Control": "no-store"})

    return endpoint


# ---------------------------------------------------------------------- the app


async def http_error(request: Request, exc: Exception) -> Response:
    """Routing errors (404, 405) as JSON under /api, as plain text for site pages."""
    assert isinstance(exc, HTTPException)
    if path_below(request.url.path, request.app.state.root_path).startswith("/api/"):
        field = "method" if exc.status_code == 405 else "path"
        body = {"error": {"field": field, "message": exc.detail}}
        return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)
    return PlainTextResponse(exc.detail, status_code=exc.status_code, headers=exc.headers)


class JSONServerErrors:
    """Middleware around the routes: an exception no handler caught becomes a JSON 500 (a
    generic message) and one log line naming its type and location. Starlette's own
    fallback answers plain text and hands the traceback, whose messages may quote the
    request, to the server's log."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watch(message: Any) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, watch)
        except Exception as exc:
            log_failure(exc)
            if not started:
                body = {"error": {"status": 500, "message": GENERIC_FAILURE}}
                await JSONResponse(body, 500)(scope, receive, send)


def build_app(
    runtime: Runtime,
    site_dir: str | os.PathLike[str],
    caps: Caps | None = None,
    root_path: str = "",
) -> Starlette:
    """The app around an already loaded runtime (tests can share one runtime, and give
    their own `Caps`, e.g. one on a clock they control); ``root_path`` serves it all under
    a path prefix (`root_path.RootPath`)."""
    settings = runtime.settings
    api = [
        Route("/ask", ask, methods=["POST"]),
        Route("/health", health, methods=["GET"]),
        Route("/feedback", feedback, methods=["POST"]),
    ]
    swapper = BundleSwapper(runtime)
    secret = reload_secret(runtime)  # a missing secret stops start-up, naming the variable
    if secret is not None:  # a pipeline's signed request swaps in the published bundles
        api.append(Route(RELOAD_PATH, reload_endpoint(swapper, secret), methods=["POST"]))
    # /api is its own mount so an unknown API path is a 404 and a wrong method a 405
    # there, instead of falling through to the static files.
    routes: list[Route | Mount] = [Mount("/api", routes=api)]
    metrics = RuntimeMetrics()
    runtime.metrics = metrics
    runtime.providers = [
        p if isinstance(p, CountedProvider) else CountedProvider(p, metrics)
        for p in runtime.providers
    ]
    metrics.watch_queues(lambda: queue_depths(runtime))
    if settings.metrics.enabled:  # a named but unset token variable fails here, at start
        endpoint = metrics_endpoint(metrics, settings.metrics.token())
        routes.append(Route("/metrics", endpoint, methods=["GET"]))
    # /mcp counts against the app's caps, read per call (shared caps open with the lifespan).
    mcp = http_mount(runtime, caps=lambda: app.state.caps)  # None without the mcp extra
    if mcp is not None:
        routes.append(Route(MCP_PATH, endpoint=mcp.app, methods=["GET", "POST", "DELETE"]))
    routes.append(Mount("/", app=SiteFiles(directory=Path(site_dir), html=True), name="site"))
    # No origins configured: no CORS headers at all, so browsers keep it same-origin.
    middleware = [
        # The prefix first: everything below sees the path under it.
        Middleware(RootPath, root=root_path),
        # Headers outermost after that, so the 500 of JSONServerErrors carries them too.
        Middleware(SecurityHeaders, settings=settings.headers),
        Middleware(JSONServerErrors),
        Middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["Content-Type"],
        )
    ]

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        if settings.records.enabled and runtime.recorder is None:  # records: spool replayed
            base = Path(settings.source).parent if settings.source else None
            runtime.recorder = Recorder(settings.records, base, webhooks=settings.webhooks)
            await runtime.recorder.start()
        shared = None
        if caps is None and settings.caps.shared:  # every worker counts against one cap
            base = Path(settings.source).parent if settings.source else None
            shared = DatabaseCaps(settings.caps, settings.records.sqlite_path(base))
            app.state.caps = runtime.caps = shared
        async with (
            mcp.lifespan() if mcp is not None else contextlib.nullcontext(),
            swapper.polling(),
        ):
            yield
        await runtime.settle(SETTLE_SECONDS)  # second opinions still being asked
        if shared is not None:
            await shared.aclose()
        if runtime.recorder is not None:
            await runtime.recorder.aclose()
            runtime.recorder = None
        await runtime.aclose()  # the providers' connection pools

    app = Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={HTTPException: http_error},
        lifespan=lifespan,
    )
    app.state.runtime = runtime
    app.state.bundles = swapper
    app.state.root_path = normalise_root_path(root_path)
    app.state.feedback = FeedbackStore()
    app.state.caps = runtime.caps = caps if caps is not None else MemoryCaps(settings.caps)
    return app


def create_app(
    site_dir: str | os.PathLike[str], settings: Settings | None = None, root_path: str = ""
) -> Starlette:
    """Load every bundle under ``site_dir`` once and serve the site and the API (under
    ``root_path`` when given: ``/docs`` serves ``/docs/api/ask``).

    A bad bundle raises `BundleError` here, naming the file and the field, so a
    deployment fails at startup rather than on its first reader."""
    runtime = load_runtime(Path(site_dir), settings or Settings())
    return build_app(runtime, site_dir, root_path=root_path)


__all__ = ["FeedbackStore", "build_app", "create_app", "parse_feedback"]
