"""The front door of `docpilot serve`: a thread with an event loop of its own that accepts
every connection, reads its first request head, and serves `/api/health` and `/metrics`
itself, so they answer in milliseconds however busy the main loop is.

Under 200 streaming readers the main event loop is saturated: each of its iterations runs
hundreds of callbacks, and a health probe that has to wait for several of them took
seconds (issue 27: p99 14.2 s). Here the probe never touches the main loop: this thread
accepts, applies the per-client cap and the ceiling (`ConnectionGuard.admit`), reads the
request head under its deadline (idle and slowloris connections die here), and then

- a GET or HEAD of `/api/health` or `/metrics` is served in this thread's loop by the same
  ASGI app, through uvicorn's own h11 protocol, and the connection closes after it;
- anything else is handed, with the bytes read so far, to the main loop
  (`connect_accepted_socket`), where `GuardedH11Protocol` serves it and every later
  request on that connection.

Only Python's GIL is shared: with the main thread busy, this thread gets it back within
the interpreter's switch interval (5 ms). Health and metrics are read-only and thread-safe
(the runtime's description; prometheus_client's registry, read as before in a worker
thread). `DoorServer` is uvicorn's `Server` with its listeners handed to the door instead
of the main loop; `docpilot serve` runs it (one process; with `--workers N`, uvicorn's
supervisor makes plain servers, which keep every other bound of `connections`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import socket
import threading
from collections.abc import Sequence
from typing import Any

from uvicorn.config import Config
from uvicorn.server import Server, ServerState

from docpilot_runtime.serve.connections import (
    RESERVED_PATHS,
    ConnectionGuard,
    ConnectionLimits,
    GuardedH11Protocol,
    guard_for,
    late_head_response,
    raw_response,
)
from docpilot_runtime.serve.root_path import path_below

log = logging.getLogger("docpilot.app")

MAX_HEAD_BYTES = 16_384  # as the main loop's h11 buffer: a longer head is refused
STOP_SECONDS = 5.0


class DoorProtocol(GuardedH11Protocol):
    """uvicorn's protocol in the door's loop, for one health or metrics request: its
    connection and task are the door's (the main server's shutdown never touches them)."""

    def __init__(self, *args: Any, door: FrontDoor, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.connections = door.connections  # type: ignore[assignment]
        self.tasks = door.tasks

    def connection_lost(self, exc: Exception | None) -> None:
        with self.guard.lock:
            self.guard.outside -= 1
        super().connection_lost(exc)


def request_line(head: bytes) -> tuple[str, str]:
    """Method and path (without its query) of a request head; ("", "") if unreadable."""
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    parts = line.split(" ")
    if len(parts) != 3:
        return "", ""
    return parts[0], parts[1].split("?", 1)[0]


class FrontDoor:
    """The thread that accepts connections on ``listeners`` (see the module docstring)."""

    def __init__(
        self, config: Config, state: ServerState, app_state: dict[str, Any],
        limits: ConnectionLimits, root_path: str = "",
    ) -> None:
        self.config = config
        self.state = state
        self.app_state = app_state
        self.limits = limits
        self.root_path = root_path
        self.guard: ConnectionGuard = guard_for(app_state, limits, state)
        self.connections: set[Any] = set()
        self.tasks: set[asyncio.Task[None]] = set()
        self.main: asyncio.AbstractEventLoop | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread: threading.Thread | None = None
        self.stopping: asyncio.Event | None = None
        self.started = threading.Event()

    # ------------------------------------------------------------------ lifecycle

    def start(self, listeners: Sequence[socket.socket]) -> None:
        """Start accepting on ``listeners`` (bound sockets) from the calling loop's thread."""
        self.main = asyncio.get_running_loop()
        for sock in listeners:
            sock.listen(self.config.backlog)
            sock.setblocking(False)
        self.thread = threading.Thread(
            target=self._run, args=(list(listeners),), name="docpilot-front-door", daemon=True)
        self.thread.start()
        self.started.wait(STOP_SECONDS)

    def stop(self) -> None:
        """Stop accepting; close what the door holds; wait for its thread."""
        loop, stopping = self.loop, self.stopping
        if loop is not None and stopping is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed in between
                loop.call_soon_threadsafe(stopping.set)
        if self.thread is not None:
            self.thread.join(STOP_SECONDS)

    def _run(self, listeners: list[socket.socket]) -> None:
        loop = asyncio.new_event_loop()
        self.loop = loop
        try:
            loop.run_until_complete(self._serve(listeners))
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _serve(self, listeners: list[socket.socket]) -> None:
        self.stopping = asyncio.Event()
        accepting = [asyncio.create_task(self._accept(sock)) for sock in listeners]
        self.started.set()
        await self.stopping.wait()
        for task in accepting + list(self.tasks):
            task.cancel()
        for protocol in list(self.connections):
            protocol.transport.close()
        await asyncio.gather(*accepting, *self.tasks, return_exceptions=True)

    # ------------------------------------------------------------------ connections

    async def _accept(self, listener: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                sock, address = await loop.sock_accept(listener)
            except OSError as exc:  # out of descriptors, a reset before accept: go on
                log.warning("front door: accept failed (%s)", type(exc).__name__)
                await asyncio.sleep(0.1)
                continue
            host = address[0] if isinstance(address, tuple) else ""
            key, reason = self.guard.admit(host)
            if key is None:
                await self._refuse(sock, raw_response(503, "Service Unavailable", reason,
                                                      "connections"))
                continue
            with self.guard.lock:
                self.guard.outside += 1
            task = asyncio.create_task(self._route(sock, key))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def _refuse(self, sock: socket.socket, response: bytes) -> None:
        with contextlib.suppress(OSError):
            await asyncio.get_running_loop().sock_sendall(sock, response)
        sock.close()

    def _drop(self, sock: socket.socket, key: str) -> None:
        """A connection the door held is over."""
        sock.close()
        with self.guard.lock:
            self.guard.outside -= 1
        self.guard.release(key)

    async def _read_head(self, sock: socket.socket) -> bytes | None:
        """The first request head (and whatever followed it in the same reads), or None
        when the connection ended, timed out or sent too much (answered and closed)."""
        loop = asyncio.get_running_loop()
        head = b""
        try:
            async with asyncio.timeout(self.limits.head_seconds):
                while b"\r\n\r\n" not in head:
                    if len(head) > MAX_HEAD_BYTES:
                        await self._refuse(sock, raw_response(
                            431, "Request Header Fields Too Large",
                            f"the request head is over {MAX_HEAD_BYTES} bytes", "head"))
                        return None
                    chunk = await loop.sock_recv(sock, 65_536)
                    if not chunk:
                        return None
                    head += chunk
        except TimeoutError:
            self.guard.timed_out += 1
            if head:  # part of a request came: say why it ends
                await self._refuse(sock, late_head_response(self.limits))
            return None
        except OSError:
            return None
        return head

    async def _route(self, sock: socket.socket, key: str) -> None:
        """Read the first request head under its deadline, then serve it here or hand it
        to the main loop."""
        try:
            head = await self._read_head(sock)
        except asyncio.CancelledError:
            self._drop(sock, key)
            raise
        if head is None:
            self._drop(sock, key)
            return
        method, path = request_line(head)
        if method in ("GET", "HEAD") and path_below(path, self.root_path) in RESERVED_PATHS:
            await self._serve_here(sock, head, key)
            return
        assert self.main is not None
        try:
            self.main.call_soon_threadsafe(self._adopt, sock, head, key)
        except RuntimeError:  # the main loop has closed: shutting down
            self._drop(sock, key)
            return
        with self.guard.lock:
            self.guard.outside -= 1

    async def _serve_here(self, sock: socket.socket, head: bytes, key: str) -> None:
        loop = asyncio.get_running_loop()
        factory = functools.partial(
            DoorProtocol, config=self.config, server_state=self.state,
            app_state=self.app_state, limits=self.limits, admitted=key, door=self)
        try:
            _, protocol = await loop.connect_accepted_socket(factory, sock)
        except OSError:
            self._drop(sock, key)
            return
        # One request per connection here, and the client is told so: the request reads as
        # if it asked to close, so the answer carries `Connection: close` (a client that
        # reused the connection for its next request would be reset).
        line, _, rest = head.partition(b"\r\n")
        protocol.data_received(line + b"\r\nConnection: close\r\n" + rest)

    def _adopt(self, sock: socket.socket, head: bytes, key: str) -> None:
        """In the main loop: serve the connection there, starting with ``head``."""
        task = asyncio.ensure_future(self._connect(sock, head, key))
        self.state.tasks.add(task)
        task.add_done_callback(self.state.tasks.discard)

    async def _connect(self, sock: socket.socket, head: bytes, key: str) -> None:
        protocol_class: Any = self.config.http_protocol_class  # a GuardedH11Protocol partial
        factory = functools.partial(
            protocol_class, config=self.config, server_state=self.state,
            app_state=self.app_state, admitted=key)
        try:
            _, protocol = await asyncio.get_running_loop().connect_accepted_socket(
                factory, sock)
        except OSError:
            sock.close()
            self.guard.release(key)
            return
        protocol.data_received(head)


class DoorServer(Server):
    """uvicorn's Server whose listeners are accepted by a `FrontDoor`."""

    def __init__(self, config: Config, limits: ConnectionLimits, root_path: str = "") -> None:
        super().__init__(config)
        self.limits = limits
        self.root_path = root_path
        self.door: FrontDoor | None = None
        self.listeners: list[socket.socket] = []

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=[])  # the app's lifespan; no listener in this loop
        if self.should_exit or not self.started:
            return
        self.listeners = list(sockets) if sockets else [self.config.bind_socket()]
        self.door = FrontDoor(self.config, self.server_state, self.lifespan.state,
                              self.limits, self.root_path)
        self.door.start(self.listeners)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if self.door is not None:
            await asyncio.to_thread(self.door.stop)
        for sock in self.listeners:
            sock.close()
        await super().shutdown(sockets=sockets)


__all__ = ["DoorServer", "FrontDoor", "request_line"]
