"""Bounds on connections, below the app: `docpilot serve` closes what would hold it open.

uvicorn alone lets a client hold a connection forever without sending a request (its
keep-alive timer starts only after a first response, and any byte cancels it), and its
`limit_concurrency` counts such connections, so two hundred idle sockets from one client
turned every page, `/api/health` and `/metrics` into 503. Here, in uvicorn's own h11
protocol (a subclass, so parsing, flow control and the ASGI cycle stay uvicorn's):

- **a request-head deadline**: a connection must deliver a whole request line and headers
  within ``head_seconds`` of opening, or of its previous response; a byte at a time does
  not reset it (slowloris). Past it the connection is closed, with a 408 when part of a
  head came;
- **a cap per client**: at most ``per_client`` open connections from one address (a
  trusted proxy's own address is not capped: it carries many readers); past it a new one
  is answered 503 and closed at once;
- **a ceiling**: past ``max_connections + reserve`` open connections a new one is answered
  503 and closed at once, so a flood from many addresses is bounded too;
- **a limit on the API, with a reserve for the cheap paths**: at most ``max_connections``
  API requests (turns, feedback, MCP, reloads) are served at once, a streamed answer
  counting until it ends; past it they answer 503 (`ConnectionBudget`) while the site's
  files, `/api/health` and `/metrics` are still served, from the reserve the ceiling
  leaves. `/api/health` reports the counts and whether the limit is full.

The state lives in `ConnectionGuard`, one per server, found through uvicorn's lifespan
state (``scope["state"]``), so the app reads it without knowing the server.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import h11
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

from docpilot_runtime.serve.root_path import route_path
from docpilot_runtime.settings.limits import LimitSettings, Network

GUARD_KEY = "docpilot.connections"  # where the guard sits in uvicorn's lifespan state
MIN_RESERVE = 16  # connections kept for pages, health and metrics past the limit
# Paths served from the reserve past the limit (below the root path), with every GET or
# HEAD outside the API: reading the site or the runtime's state costs no model call.
RESERVED_PATHS = frozenset({"/api/health", "/metrics"})
API_PREFIXES = ("/api/", "/mcp")


@dataclass(frozen=True)
class ConnectionLimits:
    """The connection bounds of one server (from `[limits]`)."""

    max_connections: int = 200
    per_client: int = 32  # 0 = no cap per client
    head_seconds: float = 10.0
    trusted_proxies: tuple[Network, ...] = ()

    @property
    def reserve(self) -> int:
        return max(MIN_RESERVE, self.max_connections // 4)

    @property
    def ceiling(self) -> int:
        return self.max_connections + self.reserve

    @classmethod
    def of(cls, caps: LimitSettings) -> ConnectionLimits:
        return cls(caps.max_connections, caps.max_connections_per_client,
                   caps.request_head_seconds, caps.trusted_proxies)

    def capped(self, host: str) -> bool:
        """Whether connections from ``host`` count against the per-client cap."""
        if self.per_client <= 0:
            return False
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return True
        return not any(address in network for network in self.trusted_proxies)


@dataclass
class ConnectionGuard:
    """Open connections of one server, in total and by client address. The front door's
    thread and the event loop both count here, so the counts change under a lock."""

    limits: ConnectionLimits
    state: ServerState
    by_client: Counter[str] = field(default_factory=Counter)
    outside: int = 0  # open connections the front door holds (heads, health, metrics)
    api_requests: int = 0  # API requests being served now (a streamed answer: until it ends)
    refused: int = 0  # connections closed at once (cap or ceiling) since start
    timed_out: int = 0  # connections closed for a late request head since start
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def open(self) -> int:
        return len(self.state.connections) + self.outside

    @property
    def full(self) -> bool:
        """At the limit: another API request is refused; the reserved paths are served."""
        return self.api_requests >= self.limits.max_connections

    def admit(self, host: str) -> tuple[str | None, str]:
        """Count a new connection from ``host``: (the key it is counted under, "" for an
        uncapped address; None when refused) and the refusal's reason."""
        limits = self.limits
        key = host if limits.capped(host) else ""
        with self.lock:
            if key and self.by_client[key] >= limits.per_client:
                self.refused += 1
                return None, f"more than {limits.per_client} open connections from one client"
            if self.open >= limits.ceiling:
                self.refused += 1
                return None, f"more than {limits.ceiling} open connections"
            if key:
                self.by_client[key] += 1
        return key, ""

    def release(self, key: str) -> None:
        """A connection counted under ``key`` has closed."""
        if not key:
            return
        with self.lock:
            self.by_client[key] -= 1
            if self.by_client[key] <= 0:
                del self.by_client[key]

    def report(self) -> dict[str, Any]:
        """What `/api/health` says about connections."""
        return {
            "open": self.open,
            "api_requests": self.api_requests,
            "limit": self.limits.max_connections,
            "reserve": self.limits.reserve,
            "full": self.full,
            "refused": self.refused,
            "timed_out": self.timed_out,
        }


def guard_for(
    app_state: dict[str, Any], limits: ConnectionLimits, state: ServerState
) -> ConnectionGuard:
    """The server's guard, kept in uvicorn's lifespan state (made on first use)."""
    guard = app_state.get(GUARD_KEY)
    if not isinstance(guard, ConnectionGuard) or guard.state is not state:
        guard = ConnectionGuard(limits, state)
        app_state[GUARD_KEY] = guard
    return guard


def raw_response(status: int, reason: str, message: str, field_name: str) -> bytes:
    """A complete JSON error response with ``Connection: close``, written before (or
    instead of) any request the protocol parsed."""
    body = json.dumps({"error": {"status": status, "field": field_name, "message": message}})
    return (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n{body}"
    ).encode()


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the head deadline, the per-client cap and the ceiling.
    `uvicorn_config` passes it as ``http=functools.partial(GuardedH11Protocol, limits=…)``
    (picklable, so `--workers N` gets it too). ``admitted``: the key the front door
    already counted this connection under (it then skips the checks it made)."""

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
        *,
        limits: ConnectionLimits,
        admitted: str | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.limit_concurrency = None  # the app decides, path by path (ConnectionBudget)
        self.guard = guard_for(app_state, limits, server_state)
        self.admitted = admitted
        self.client_key = ""
        self.head_timer: asyncio.TimerHandle | None = None
        self.head_bytes = 0  # bytes of the request head being waited for

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if self.admitted is not None:
            self.client_key = self.admitted
        else:
            # Counted with this connection already in the set: admit() sees one more.
            self.connections.discard(self)
            key, reason = self.guard.admit(self.client[0] if self.client else "")
            self.connections.add(self)
            if key is None:
                self.transport.write(raw_response(503, "Service Unavailable", reason,
                                                  "connections"))
                self.transport.close()
                return
            self.client_key = key
        self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_timer()
        self.guard.release(self.client_key)
        self.client_key = ""
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        waiting = self.head_timer is not None
        super().data_received(data)
        if waiting and self.head_timer is not None:
            if self.conn.their_state is h11.IDLE:  # the head is still incomplete
                self.head_bytes += len(data)
            else:
                self._stop_head_timer()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # Waiting for the next request on this connection: its head has the same deadline.
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self._await_head()

    def _await_head(self) -> None:
        self._stop_head_timer()
        self.head_bytes = 0
        self.head_timer = self.loop.call_later(self.guard.limits.head_seconds, self._late_head)

    def _stop_head_timer(self) -> None:
        if self.head_timer is not None:
            self.head_timer.cancel()
            self.head_timer = None

    def _late_head(self) -> None:
        self.head_timer = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        self.guard.timed_out += 1
        if self.head_bytes:  # part of a request came: say why it ends
            self.transport.write(late_head_response(self.guard.limits))
        self.transport.close()


def late_head_response(limits: ConnectionLimits) -> bytes:
    return raw_response(
        408, "Request Timeout",
        f"the request head did not arrive within {limits.head_seconds:g} s", "head")


def guard_of(scope: Scope) -> ConnectionGuard | None:
    """The server's guard, when the app runs under `GuardedH11Protocol`."""
    guard = (scope.get("state") or {}).get(GUARD_KEY)
    return guard if isinstance(guard, ConnectionGuard) else None


def reserved(method: str, path: str) -> bool:
    """Whether a request is served from the reserve past the limit."""
    if path in RESERVED_PATHS:
        return True
    return method in ("GET", "HEAD") and not path.startswith(API_PREFIXES)


class ConnectionBudget:
    """Middleware: at most ``max_connections`` API requests at once (a streamed answer
    counts until it ends); past it the API answers 503 (JSON, with Retry-After), while the
    reserved paths are served whatever the count."""

    RETRY_AFTER = "5"

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        guard = guard_of(scope) if scope["type"] == "http" else None
        if guard is None or reserved(scope["method"], route_path(scope)):
            await self.app(scope, receive, send)
            return
        if not guard.full:
            guard.api_requests += 1
            try:
                await self.app(scope, receive, send)
            finally:
                guard.api_requests -= 1
            return
        limit = guard.limits.max_connections
        body = json.dumps({"error": {
            "status": 503, "field": "connections", "limit": limit,
            "message": f"{limit} API requests are being served; try again shortly"}}).encode()
        await send({"type": "http.response.start", "status": 503, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
            (b"retry-after", self.RETRY_AFTER.encode()), (b"cache-control", b"no-store")]})
        await send({"type": "http.response.body", "body": body})


__all__ = [
    "ConnectionBudget",
    "ConnectionGuard",
    "ConnectionLimits",
    "GuardedH11Protocol",
    "guard_of",
    "reserved",
]
