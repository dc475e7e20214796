"""Swapping a running runtime to a newer bundle set: on a signed POST, by polling a URL,
or by watching the site folder.

`BundleSwapper.reload` asks the runtime's `BundleSource` for the set it lists now (in a
worker thread: downloads, checks and index building never block turns), then assigns
`Runtime.sites` once. Reloads are serialised, so a poll and a POST never race. A set
refused by a check leaves the old one serving and is logged with the reason.

``POST /api/bundle/reload`` exists only when `[bundle] reload_secret_env` names a
secret; the request must carry ``X-DocPilot-Timestamp``, a fresh ``X-DocPilot-Nonce`` and
``X-DocPilot-Signature: sha256=HMAC(secret, "<timestamp>.<nonce>.<body>")``. A nonce is
accepted once (`UsedNonces`: each process remembers the nonces of the signature window,
so a captured request replays nowhere, or with `--workers N` at most once per process);
the body has the `[limits] body_read_seconds` deadline. Answers: 200 ``{"status":
"swapped" | "unchanged", "bundles": [...]}``, 401 for a bad, stale or replayed signature,
408 for a body that does not arrive, 422 naming the check a refused bundle failed.

A runtime serving the site folder (no `[bundle] url`) watches it (`[bundle]
watch_seconds`, 2 s by default): the size and modification time of the manifests and
bundles it read. A rebuild changes them; once they have stayed the same for one more
interval (a build in progress has settled) the set is reloaded like any other, and the
callbacks in `on_swap` run (the page policy reads the pages again). With watching off the
start-up log says that a rebuilt site needs a restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from docpilot_runtime.bundle.schema import BundleError
from docpilot_runtime.serve.requests import BodyTooLarge, read_capped
from docpilot_runtime.sites.source import (
    NONCE_HEADER,
    SIGNATURE_HEADER,
    SIGNATURE_MAX_AGE,
    TIMESTAMP_HEADER,
    verify_signature,
)
from docpilot_runtime.turn import Runtime

log = logging.getLogger("docpilot.bundle")

RELOAD_PATH = "/bundle/reload"  # under /api
RELOAD_BODY_BYTES = 4096
MAX_NONCES = 10_000  # signed requests remembered within the window; past it, refused


class ReloadSecretMissing(ValueError):
    """`[bundle] reload_secret_env` names a variable that is not set."""


@dataclass
class SwapOutcome:
    status: str  # "swapped", "unchanged" or "refused"
    error: str = ""
    bundles: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"status": self.status, "bundles": self.bundles}
        if self.error:
            data["error"] = self.error
        return data


def bundles_of(runtime: Runtime) -> list[dict[str, Any]]:
    return [
        {"prefix": s.prefix, "bundle_hash": s.bundle.hash, "language": s.language,
         "version": s.version}
        for s in runtime.sites
    ]


class BundleSwapper:
    """Reloads one runtime's bundles from its source; at most one reload at a time."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._lock = asyncio.Lock()
        self.swaps = 0
        self.refusals = 0
        self.on_swap: list[Callable[[], None]] = []  # run in a worker thread after a swap

    async def reload(self, use_etag: bool = False) -> SwapOutcome:
        """Load what the source lists now and swap it in, or refuse it whole."""
        source = self.runtime.source
        if source is None:
            return SwapOutcome("refused", "this runtime was not loaded from a bundle source")
        async with self._lock:
            try:
                sites = await asyncio.to_thread(source.load, list(self.runtime.sites), use_etag)
            except BundleError as exc:
                self.refusals += 1
                log.warning("new bundle refused; the loaded one keeps serving: %s", exc)
                return SwapOutcome("refused", str(exc), bundles_of(self.runtime))
            if sites is None:
                return SwapOutcome("unchanged", bundles=bundles_of(self.runtime))
            if self.runtime.http is None and any(site.bundle.tools for site in sites):
                self.runtime.http = httpx.AsyncClient()
            # One assignment: a turn in flight keeps the Site it picked at its start.
            self.runtime.sites = sites
            self.swaps += 1
            for callback in self.on_swap:
                await asyncio.to_thread(callback)
            outcome = SwapOutcome("swapped", bundles=bundles_of(self.runtime))
            log.info(
                "bundles swapped in from %s: %s",
                source.describe,
                ", ".join(f"{b['prefix']}={b['bundle_hash'][:12]}" for b in outcome.bundles),
            )
            return outcome

    async def poll(self, seconds: float) -> None:
        """Reload with If-None-Match every ``seconds`` until cancelled."""
        while True:
            await asyncio.sleep(seconds)
            with contextlib.suppress(Exception):  # logged by reload; never ends the poller
                await self.reload(use_etag=True)

    async def watch(self, seconds: float) -> None:
        """Reload every time the site folder's bundle files change and then stay the same
        for one more interval (a rebuild has settled), until cancelled."""
        source = self.runtime.source
        assert source is not None
        changed_to = None
        while True:
            await asyncio.sleep(seconds)
            now = await asyncio.to_thread(source.fingerprint)
            if now == source.located_print:
                changed_to = None
            elif now != changed_to:
                changed_to = now  # still being written, perhaps: look again next time
            else:
                changed_to = None
                with contextlib.suppress(Exception):  # logged by reload; never ends the watch
                    await self.reload()

    @contextlib.asynccontextmanager
    async def polling(self) -> AsyncIterator[None]:
        """Poll the URL while the block runs, when `[bundle] poll_seconds` asks for it; or
        watch the site folder (`[bundle] watch_seconds`), saying when that is off."""
        settings = self.runtime.settings.bundle
        task = None
        if settings.url:
            if settings.poll_seconds > 0:
                task = asyncio.create_task(
                    self.poll(settings.poll_seconds), name="docpilot-bundle-poll"
                )
        elif self.runtime.source is not None:
            where = self.runtime.source.describe
            if settings.watch_seconds > 0:
                task = asyncio.create_task(
                    self.watch(settings.watch_seconds), name="docpilot-bundle-watch"
                )
                log.info("watching %s for a rebuilt site every %g s", where, settings.watch_seconds)
            else:
                log.info(
                    "serving the bundles of %s as loaded at start: after a rebuild, restart "
                    "(or set [bundle] watch_seconds)",
                    where,
                )
        try:
            yield
        finally:
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task


@dataclass
class UsedNonces:
    """The nonces of signed requests accepted within the signature window (seconds),
    so each is accepted once; bounded, since only a holder of the secret adds any."""

    window: float = 2 * SIGNATURE_MAX_AGE  # a timestamp may be that far off either way
    limit: int = MAX_NONCES
    clock: Any = time.monotonic
    seen: dict[str, float] = field(default_factory=dict)  # nonce -> when it may be forgotten

    def use(self, nonce: str) -> str:
        """"" when ``nonce`` is new (and now used), else why it is refused."""
        now = self.clock()
        for old in [n for n, until in self.seen.items() if until <= now]:
            del self.seen[old]
        if nonce in self.seen:
            return f"{NONCE_HEADER} was already used"
        if len(self.seen) >= self.limit:
            return f"more than {self.limit} signed reloads within {self.window:g} s"
        self.seen[nonce] = now + self.window
        return ""


def reload_secret(runtime: Runtime) -> bytes | None:
    """The reload secret from the environment; None when reloads are off."""
    name = runtime.settings.bundle.reload_secret_env
    if not name:
        return None
    value = os.environ.get(name, "")
    if not value:
        raise ReloadSecretMissing(
            f"[bundle] reload_secret_env names {name}, which is not set (or empty)"
        )
    return value.encode("utf-8")


def reload_endpoint(swapper: BundleSwapper, secret: bytes) -> Any:
    """The `POST /api/bundle/reload` handler for ``swapper``, checking ``secret``."""

    used = UsedNonces()
    seconds = swapper.runtime.settings.caps.body_read_seconds

    async def reload(request: Request) -> Response:
        try:
            async with asyncio.timeout(seconds):  # a trickled body would hold it forever
                body = await read_capped(request, RELOAD_BODY_BYTES)
        except BodyTooLarge:
            return _error(413, "body", f"is over the limit {RELOAD_BODY_BYTES}")
        except TimeoutError:
            return _error(408, "body", f"was not received within {seconds:g} seconds")
        headers = request.headers
        nonce = headers.get(NONCE_HEADER)
        problem = verify_signature(
            secret, headers.get(TIMESTAMP_HEADER), nonce, headers.get(SIGNATURE_HEADER), body
        ) or used.use(nonce or "")
        if problem:
            log.warning("bundle reload refused: %s", problem)
            return _error(401, "signature", problem)
        outcome = await swapper.reload()
        status = 422 if outcome.status == "refused" else 200
        return JSONResponse(outcome.to_dict(), status, headers={"Cache-Control": "no-store"})

    return reload


def _error(status: int, field_name: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"status": status, "field": field_name, "message": message}},
                        status)


__all__ = [
    "RELOAD_PATH",
    "BundleSwapper",
    "ReloadSecretMissing",
    "SwapOutcome",
    "UsedNonces",
    "reload_endpoint",
    "reload_secret",
]
