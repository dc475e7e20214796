"""The Starlette app: the built site as static files (`site_files`) plus the API
(`/api/ask` in `ask`, `/api/feedback` in `feedback`, `/api/health` here, and
`/api/bundle/reload` when `[bundle]` names a reload secret: see `bundle_swap`).

The runtime is loaded once, when the app is created, so a bad bundle stops
`docpilot serve` at startup with the file and field named instead of failing the
first reader. Handlers are I/O only: they check the request, hand an `AskRequest` to
`Runtime.ask` and write its result as JSON or as Server-Sent Events.

Privacy rule for everything here: the question, the quote, the history and the
feedback note never reach a log line or a response header; a pasted credential is
part of the question, so the same rule keeps it out.

Abuse rules: `/api/ask` counts every accepted question against the rate caps of
`limits.caps` (in memory, or `limits.shared` with `[limits] shared`) before the turn starts
(over a cap: 429 with Retry-After, no model call), and past the daily spend cap turns
settle as `passages` with `fallback_reason`. Every
response carries the headers of `security_headers`; dotfiles are never served.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from docpilot_runtime.limits.caps import Caps, MemoryCaps
from docpilot_runtime.limits.shared import DatabaseCaps
from docpilot_runtime.records import DATABASE_URL_ENV, Recorder
from docpilot_runtime.records.location import records_settings
from docpilot_runtime.records.rescreen import Screen
from docpilot_runtime.screen.credentials import check_version, find_credential
from docpilot_runtime.serve.ask import ask
from docpilot_runtime.serve.bundle_swap import (
    RELOAD_PATH,
    BundleSwapper,
    reload_endpoint,
    reload_secret,
)
from docpilot_runtime.serve.connections import API_PREFIXES, ConnectionBudget, guard_of
from docpilot_runtime.serve.feedback import FeedbackStore, feedback
from docpilot_runtime.serve.mcp import MCP_PATH, http_mount
from docpilot_runtime.serve.metrics import CONTENT_TYPE, CountedProvider, RuntimeMetrics, authorized
from docpilot_runtime.serve.requests import GENERIC_FAILURE, log_failure, runtime_of
from docpilot_runtime.serve.root_path import RootPath, normalise_root_path, path_below
from docpilot_runtime.serve.security_headers import PagePolicies, SecurityHeaders
from docpilot_runtime.serve.site_files import SiteFiles
from docpilot_runtime.settings.load import Settings
from docpilot_runtime.turn import Runtime, load_runtime

log = logging.getLogger("docpilot.app")

SETTLE_SECONDS = 10.0  # at shutdown, how long second opinions may still finish
OUTBOX_DEPTH_SECONDS = 2.0  # a scrape's wait for the records database, then "not known"


async def health(request: Request) -> Response:
    """`GET /api/health`: what is loaded (bundle hash, units, embedder, mode), and under
    `docpilot serve` the open connections and whether their limit is full."""
    body = runtime_of(request).health()
    guard = guard_of(request.scope)
    if guard is not None:
        body["connections"] = guard.report()
    return JSONResponse(body, headers={"Cache-Control": "no-store"})


def stored_text_screen() -> Screen:
    """The credential check the records are swept with (what an older one missed)."""

    def kind_of(text: str) -> str | None:
        found = find_credential(text)
        return found.kind if found is not None else None

    return Screen(kind_of, check_version())


def queue_depths(runtime: Runtime) -> dict[str, int | None]:
    """Entries waiting in the records spool and the webhook outbox (None: not known)."""
    recorder = runtime.recorder
    if recorder is None:
        return {}
    depths: dict[str, int | None] = {"spool": None, "outbox": None}
    with contextlib.suppress(Exception):  # a scrape never fails on a busy or absent database
        depths["spool"] = recorder.spool.depth()
    if recorder.webhooks is not None:
        depths["outbox"] = recorder.outbox_depth(timeout=OUTBOX_DEPTH_SECONDS)
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
    """Routing errors (404, 405) as JSON on the API's paths (/api/, /metrics, /mcp), as
    plain text for site pages."""
    assert isinstance(exc, HTTPException)
    path = path_below(request.url.path, request.app.state.root_path)
    if path.startswith(API_PREFIXES) or path == "/metrics":
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
    policies = PagePolicies(settings.headers, Path(site_dir))  # reads the built pages
    swapper.on_swap.append(policies.refresh)  # a rebuilt site may load from new origins
    # No origins configured: no CORS headers at all, so browsers keep it same-origin.
    middleware = [
        # The prefix first: everything below sees the path under it.
        Middleware(RootPath, root=root_path),
        # Headers outermost after that, so the 500 of JSONServerErrors carries them too.
        Middleware(SecurityHeaders, policies=policies),
        Middleware(JSONServerErrors),
        # Past the connection limit the API answers 503; pages, health, metrics go on.
        Middleware(ConnectionBudget),
        Middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["Content-Type"],
        )
    ]

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        base = Path(settings.source).parent if settings.source else None
        needs_database = settings.records.enabled or (caps is None and settings.caps.shared)
        records = settings.records
        if needs_database:  # the configured file, or the site's in the user's data folder
            records = await asyncio.to_thread(records_settings, settings.records, base, site_dir)
        if settings.records.enabled and runtime.recorder is None:  # records: spool replayed
            if not os.environ.get(DATABASE_URL_ENV):
                log.info("turn records in %s", records.path)
            runtime.recorder = Recorder(records, base, webhooks=settings.webhooks,
                                        screen=stored_text_screen())
            await runtime.recorder.start()
        shared = None
        if caps is None and settings.caps.shared:  # every worker counts against one cap
            shared = DatabaseCaps(settings.caps, records.sqlite_path())
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


__all__ = ["build_app", "create_app"]
