"""A reader who goes away ends the provider call: through a real uvicorn, over SSE and
plain JSON, the turn is cancelled and the provider stream closed, so its connection goes
back to the pool and the provider stops generating; the next reader gets an answer.

Measured before this test existed: abandoned SSE turns left their provider streams open,
and after ~100 of them httpx's pool (100 connections) was full, so every later turn waited
`timeout` and settled as `passages`; abandoned JSON turns were never stopped at all.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from docpilot_runtime.providers import ProviderSettings
from docpilot_runtime.serve.app import create_app
from docpilot_runtime.settings.load import Settings
from docpilot_runtime.shared.types import AskRequest
from docpilot_runtime.sites.loader import load_site
from servers.anthropic_messages import AnthropicServer, Fault, ScriptedServer, answer_reply
from servers.openai_chat import OpenAIChatServer
from servers.runtime import NO_CAPS, RunningServer, checked_out_connections, serve_app

QUESTION = "How do I exclude a page from the assistant?"
ABANDONED_SSE = 300
ABANDONED_JSON = 40
WAIT = 30.0  # seconds a condition may take to hold before the test fails (never slept)
# Streams for far longer than the test: a stream that ends was ended by its client.
ENDLESS = Fault("slow", seconds=600.0, interval=0.02)


@pytest.fixture(scope="module")
def primed(example_site: Path) -> list[str]:
    site = load_site(example_site, "/")
    return [site.bundle.units[u].id for u in site.retrieve(AskRequest(QUESTION)).model_order()[:6]]


@pytest.fixture(params=["anthropic", "openai"])
def provider_server(request: pytest.FixtureRequest) -> Iterator[ScriptedServer]:
    server_type = AnthropicServer if request.param == "anthropic" else OpenAIChatServer
    with server_type() as server:
        yield server


@pytest.fixture
def running(example_site: Path, provider_server: ScriptedServer) -> Iterator[RunningServer]:
    kind = "anthropic" if isinstance(provider_server, AnthropicServer) else "openai"
    provider = ProviderSettings(
        kind=kind, base_url=provider_server.base_url, model=f"{kind}-test", retries=0
    )
    with serve_app(create_app(example_site, Settings(providers=(provider,), caps=NO_CAPS))) as live:
        yield live


def ask_bytes(host: str, stream: bool) -> bytes:
    body = json.dumps({"question": QUESTION}).encode()
    accept = "text/event-stream" if stream else "application/json"
    head = (
        f"POST /api/ask HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Accept: {accept}\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def abandon_turn(running: RunningServer, server: ScriptedServer, stream: bool) -> int:
    """Ask, wait until the provider has begun streaming this turn's reply, then close the
    socket like a reader closing the tab; the provider request's number."""
    server.script(ENDLESS)
    number = len(server.requests) + 1
    parts = urlsplit(running.base_url)
    with socket.create_connection((parts.hostname, parts.port)) as reader:
        reader.sendall(ask_bytes(parts.netloc, stream))
        assert server.wait_until(lambda s: number in s.started_streams, WAIT), (
            f"provider request {number} never started streaming"
        )
    return number


def pool_drains(running: RunningServer) -> bool:
    """Whether the pool holds no checked-out connection within WAIT. The provider sees a
    stream closed a moment before httpcore hands the connection back, so this polls."""
    deadline = time.monotonic() + WAIT
    while checked_out_connections(running):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def ask_json(running: RunningServer) -> dict[str, Any]:
    response = httpx.post(f"{running.base_url}/api/ask", json={"question": QUESTION}, timeout=WAIT)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


# One vendor for the long run (the mechanism is shared); both for the JSON one.
@pytest.mark.parametrize("provider_server", ["anthropic"], indirect=True)
def test_abandoned_sse_turns_close_their_provider_streams_and_free_the_pool(
    running: RunningServer, provider_server: ScriptedServer, primed: list[str]
) -> None:
    numbers = {abandon_turn(running, provider_server, stream=True) for _ in range(ABANDONED_SSE)}

    assert provider_server.wait_until(lambda s: numbers <= s.closed_by_client, WAIT), (
        f"{len(numbers - provider_server.closed_by_client)} of {ABANDONED_SSE} provider "
        "streams were never closed by the runtime"
    )
    assert pool_drains(running), f"{checked_out_connections(running)} connections still out"
    provider_server.script(answer_reply(markdown=f"Set `exclude` [[{primed[0]}]]."))
    assert ask_json(running)["kind"] == "answer"


def test_abandoned_json_turns_are_cancelled_and_close_their_provider_streams(
    running: RunningServer, provider_server: ScriptedServer, primed: list[str]
) -> None:
    numbers = {abandon_turn(running, provider_server, stream=False) for _ in range(ABANDONED_JSON)}

    assert provider_server.wait_until(lambda s: numbers <= s.closed_by_client, WAIT), (
        f"{len(numbers - provider_server.closed_by_client)} of {ABANDONED_JSON} provider "
        "streams outlived the reader who asked"
    )
    assert pool_drains(running), f"{checked_out_connections(running)} connections still out"
    provider_server.script(answer_reply(markdown=f"Set `exclude` [[{primed[0]}]]."))
    assert ask_json(running)["kind"] == "answer"
