"""The app in-process, for tests where real HTTP is not what is under test.

`in_process(app)` is Starlette's test client (an httpx.Client whose transport calls the
ASGI app directly, with its lifespan run on entry and exit): no port, no uvicorn thread,
and a failing route raises here with its traceback. It reads a response whole before
returning it, so streams arrive complete; tests of disconnects, connection limits,
slow clients and headers that uvicorn writes keep `servers.runtime.serve_app`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from docpilot_runtime.serve.app import create_app
from starlette.testclient import TestClient
from starlette.types import ASGIApp

from servers.runtime import example_settings


@contextmanager
def in_process(app: ASGIApp) -> Iterator[httpx.Client]:
    """A client for ``app`` for the duration of the block (its lifespan around it)."""
    with TestClient(app, base_url="http://127.0.0.1") as client:
        yield client


@pytest.fixture(scope="module")
def example_client(example_site: Path) -> Iterator[httpx.Client]:
    """example-site's app (settings as `example_server` serves it) in-process, per module."""
    with in_process(create_app(example_site, example_settings())) as client:
        yield client
