"""Bounds on `/mcp` sessions: per client and in total, opened through the call caps, idle
ones forgotten quickly, so one client's flood leaves other agents their sessions.

The MCP SDK keeps a stateful session for every `initialize` until the client deletes it or
it has been idle for 30 minutes, up to 10,000 at once: one client opening sessions in a loop
took every slot (RSS +375 MB) and left every other agent 503 for half an hour. `SessionGate`
sits in front of the SDK's app:

- the client is the address the caps count (`limits.caps.client_address`: X-Forwarded-For
  only from a trusted proxy), also handed to the SDK as the request's client, so tool
  calls are capped per client the same way;
- a request that opens a session is one call against the client's call cap (as a tool
  call is), then must fit ``per_client`` open sessions of that client and ``total`` in all:
  past the first, 429 with Retry-After; past the second, 503;
- a session idle (no request in flight) for ``idle_seconds`` is no longer counted, and the
  SDK, given the same idle timeout, ends it; a deleted session is forgotten at once.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from docpilot_runtime.limits.caps import Admission, client_address
from docpilot_runtime.settings.limits import LimitSettings, Network

SESSION_HEADER = b"mcp-session-id"
# Where a refused request learns when to come back when the cap is not a rate.
RETRY_SECONDS = 30


@dataclass(frozen=True)
class SessionLimits:
    """How many sessions, and for how long idle."""

    total: int = 100
    per_client: int = 8
    idle_seconds: float = 300.0


@dataclass
class _Session:
    client: str
    last_active: float
    in_flight: int = 0


@dataclass
class SessionTable:
    """Open sessions by id, with their client; the clock is injectable for tests."""

    limits: SessionLimits
    clock: Callable[[], float] = time.monotonic
    sessions: dict[str, _Session] = field(default_factory=dict)

    def reap(self) -> None:
        """Forget sessions idle for ``idle_seconds``."""
        now = self.clock()
        idle = [sid for sid, s in self.sessions.items()
                if s.in_flight == 0 and now - s.last_active >= self.limits.idle_seconds]
        for sid in idle:
            del self.sessions[sid]

    def of(self, client: str) -> int:
        return sum(s.client == client for s in self.sessions.values())

    def refusal(self, client: str) -> tuple[int, str] | None:
        """(status, message) when ``client`` may not open another session now."""
        self.reap()
        if self.of(client) >= self.limits.per_client:
            return 429, (f"more than {self.limits.per_client} open sessions from one client; "
                         "end one (DELETE) or let one idle out")
        if len(self.sessions) >= self.limits.total:
            return 503, f"more than {self.limits.total} open sessions"
        return None

    def opened(self, sid: str, client: str) -> None:
        self.sessions[sid] = _Session(client, self.clock())

    def begin(self, sid: str) -> bool:
        session = self.sessions.get(sid)
        if session is None:
            return False
        session.in_flight += 1
        return True

    def end(self, sid: str) -> None:
        session = self.sessions.get(sid)
        if session is not None:
            session.in_flight -= 1
            session.last_active = self.clock()

    def forget(self, sid: str) -> None:
        self.sessions.pop(sid, None)


# Counts one call of a client against its call cap: whether it may make it.
AdmitCall = Callable[[str], Awaitable[Admission]]


class SessionGate:
    """ASGI middleware in front of the SDK's `/mcp` app (see the module docstring)."""

    def __init__(
        self, app: ASGIApp, limits: SessionLimits, admit: AdmitCall | None,
        trusted_proxies: Sequence[Network] = (),
    ) -> None:
        self.app = app
        self.table = SessionTable(limits)
        self.admit = admit
        self.trusted = tuple(trusted_proxies)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        peer = scope.get("client") or ("", 0)
        headers = [(k.lower(), v) for k, v in scope.get("headers", [])]
        forwarded = [v.decode("latin-1") for k, v in headers if k == b"x-forwarded-for"]
        client = client_address(peer[0], forwarded, self.trusted)
        scope = {**scope, "client": (client, peer[1])}  # tool calls are capped per client too
        sid = next((v.decode("latin-1") for k, v in headers if k == SESSION_HEADER), None)
        if sid is not None:
            await self._in_session(sid, scope, receive, send)
            return
        if scope["method"] != "POST":
            await self.app(scope, receive, send)  # the SDK answers what it does not serve
            return
        if self.admit is not None:
            admission = await self.admit(f"http:{client}")
            if not admission.allowed:
                await _refuse(send, 429, "rate cap reached: too many MCP calls; try again in "
                              f"{admission.retry_after} s", admission.retry_after)
                return
        refused = self.table.refusal(client)
        if refused is not None:
            await _refuse(send, *refused, RETRY_SECONDS)
            return
        async def watch(message: Message) -> None:
            # Counted as the answer starts: the client may open its next one before this
            # request's handler has returned.
            if message["type"] == "http.response.start" and message["status"] < 400:
                for k, v in message.get("headers", []):
                    if k.lower() == SESSION_HEADER:
                        self.table.opened(v.decode("latin-1"), client)
            await send(message)

        await self.app(scope, receive, watch)

    async def _in_session(self, sid: str, scope: Scope, receive: Receive, send: Send) -> None:
        known = self.table.begin(sid)

        async def watch(message: Message) -> None:
            if known and message["type"] == "http.response.start":
                status = message["status"]
                if (scope["method"] == "DELETE" and 200 <= status < 300) or status == 404:
                    self.table.forget(sid)  # ended: the slot is free as the answer starts
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            if known:
                self.table.end(sid)


async def _refuse(send: Send, status: int, message: str, retry_after: int) -> None:
    """A JSON-RPC error, as the SDK writes its own, with the HTTP status and Retry-After."""
    body = json.dumps({"jsonrpc": "2.0", "id": None,
                       "error": {"code": -32000, "message": message}}).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        (b"retry-after", str(max(1, math.ceil(retry_after))).encode())]})
    await send({"type": "http.response.body", "body": body})


def limits_of(caps: LimitSettings) -> SessionLimits:
    """The session limits of `[limits]`."""
    return SessionLimits(caps.mcp_sessions, caps.mcp_sessions_per_client,
                         caps.mcp_session_idle_seconds)


__all__ = ["AdmitCall", "SessionGate", "SessionLimits", "SessionTable", "limits_of"]
