"""The DocPilot runtime served for real: uvicorn on a free loopback port, in a thread.

`serve_app(app)` runs any ASGI app until the block ends; the session fixture
`example_server` serves example-site (built once by conftest's `example_site`) with
one allowed CORS origin, for the API tests and, later, the browser tests. Use it with
``from servers.runtime import example_server`` next to the tests that need it.

Shutdown is complete (uvicorn closes its listening socket and connections before the
thread ends), because pytest runs with ``-W error`` and a leaked socket is a
ResourceWarning, i.e. a failure.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from docpilot_runtime.serve.app import create_app
from docpilot_runtime.serve.connections import ConnectionLimits
from docpilot_runtime.serve.front_door import DoorServer
from docpilot_runtime.serve.server import uvicorn_config
from docpilot_runtime.settings.limits import LimitSettings
from docpilot_runtime.settings.load import Settings
from starlette.types import ASGIApp

ALLOWED_ORIGIN = "http://allowed.example"
STARTUP_DEADLINE = 30.0
SHUTDOWN_DEADLINE = 15.0


@dataclass
class RunningServer:
    """A live server: its base URL, the app it serves and the uvicorn handle."""

    base_url: str
    app: ASGIApp
    server: uvicorn.Server
    thread: threading.Thread


def _wait_until_started(server: uvicorn.Server, thread: threading.Thread) -> None:
    """Poll (not a fixed sleep) until uvicorn is listening, with a deadline; fail with the
    reason if the thread died first."""
    deadline = time.monotonic() + STARTUP_DEADLINE
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("uvicorn exited before it started listening")
        if time.monotonic() > deadline:
            server.should_exit = True
            raise TimeoutError(f"uvicorn did not start within {STARTUP_DEADLINE} s")
        time.sleep(0.01)


@contextmanager
def serve_app(
    app: ASGIApp, host: str = "127.0.0.1", settings: Settings | None = None,
    front_door: bool = False, **options: Any,
) -> Iterator[RunningServer]:
    """Serve ``app`` on a free port of ``host`` for the duration of the block, configured
    as `docpilot serve` configures uvicorn for ``settings`` (``options`` override); with
    ``front_door``, accepted by the front door's thread as `docpilot serve` accepts."""
    # port=0: the kernel picks a free port, so parallel runs cannot collide.
    # log_config=None: leave the process's logging alone, so caplog sees every record.
    # The configuration of `docpilot serve` (connection limits, no proxy headers).
    chosen = {"log_level": "warning", "log_config": None, **options}
    settings = settings or Settings()
    config = uvicorn_config(app, settings, host, 0, **chosen)
    server = (DoorServer(config, ConnectionLimits.of(settings.caps)) if front_door
              else uvicorn.Server(config))
    thread = threading.Thread(target=server.run, name="uvicorn-test", daemon=True)
    thread.start()
    try:
        _wait_until_started(server, thread)
        if isinstance(server, DoorServer):
            port = server.listeners[0].getsockname()[1]
        else:
            port = server.servers[0].sockets[0].getsockname()[1]
        yield RunningServer(f"http://{host}:{port}", app, server, thread)
    finally:
        server.should_exit = True
        thread.join(SHUTDOWN_DEADLINE)
        if thread.is_alive():
            raise RuntimeError(f"uvicorn did not stop within {SHUTDOWN_DEADLINE} s")


def checked_out_connections(running: RunningServer) -> int:
    """Connections of the runtime's provider client that are checked out: serving a
    request (in httpcore's ``_requests`` from checkout to close) or still ACTIVE, i.e.
    neither idle in the pool nor closed.

    Read in-process: uvicorn runs in a thread of this process. An abandoned stream whose
    close was cut short stays ACTIVE with no request, so both are counted.
    """
    provider: Any = running.app.state.runtime.providers[0]  # type: ignore[attr-defined]
    provider = getattr(provider, "inner", provider)  # the app counts errors around it
    pool = provider._client._transport._pool
    active = [c for c in pool.connections if not (c.is_idle() or c.is_closed())]
    return len(pool._requests) + len(active)


# Every test server answers one loopback address; the caps have their own tests.
NO_CAPS = LimitSettings(answers_per_minute=0, answers_per_minute_per_client=0)


def example_settings() -> Settings:
    """Default settings plus one allowed CORS origin (``ALLOWED_ORIGIN``), with the rate
    caps off: every test shares this server from one loopback address (the caps have
    their own tests, on their own servers)."""
    return Settings(cors_origins=(ALLOWED_ORIGIN,), caps=NO_CAPS)


@pytest.fixture(scope="session")
def example_server(example_site: Path) -> Iterator[RunningServer]:
    """example-site and its API on a real uvicorn, once per session."""
    with serve_app(create_app(example_site, example_settings())) as running:
        yield running
