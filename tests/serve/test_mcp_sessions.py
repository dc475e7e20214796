"""`/mcp` sessions bounded (issue 27, finding 2), over real HTTP with the official SDK's
server: one client's flood of `initialize` gets only its share of sessions while another
agent works normally, opening a session counts against the client's call cap, and an idle
session is ended quickly (its slot free again, its id answering 404). The flooding clients
connect from other loopback addresses (127.0.0.0/8 is all loopback) than the agent."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from docpilot_runtime.serve.app import build_app
from docpilot_runtime.settings.limits import LimitSettings
from docpilot_runtime.settings.load import Settings
from docpilot_runtime.turn import load_runtime
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from servers.runtime import RunningServer, serve_app

PER_CLIENT = 3
TOTAL = 6
IDLE_SECONDS = 2.0
WAIT = 60.0
INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "flood", "version": "0"}},
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def serving(site: Path, idle_seconds: float) -> Iterator[RunningServer]:
    caps = LimitSettings(answers_per_minute=0, answers_per_minute_per_client=0,
                         mcp_sessions=TOTAL, mcp_sessions_per_client=PER_CLIENT,
                         mcp_session_idle_seconds=idle_seconds, max_connections_per_client=0)
    settings = Settings(caps=caps)
    app = build_app(load_runtime(site, settings), site)
    with serve_app(app, settings=settings) as running:
        yield running


@pytest.fixture
def server(small_site: Path) -> Iterator[RunningServer]:
    """Sessions idle for long (WAIT): none ends while a slow machine runs the test."""
    yield from serving(small_site, WAIT)


@pytest.fixture
def short_idle_server(small_site: Path) -> Iterator[RunningServer]:
    """Sessions ended after IDLE_SECONDS idle."""
    yield from serving(small_site, IDLE_SECONDS)


def client_from(address: str) -> httpx.Client:
    return httpx.Client(transport=httpx.HTTPTransport(local_address=address), timeout=WAIT)


def open_session(client: httpx.Client, base_url: str) -> httpx.Response:
    with client.stream("POST", base_url + "/mcp", json=INITIALIZE, headers=HEADERS) as response:
        response.read()
        return response


def agent_works(base_url: str) -> list[str]:
    """A real agent (the SDK's client) from 127.0.0.1: initialize, list the tools, search."""
    seen: list[str] = []

    async def main() -> None:
        async with (
            streamable_http_client(base_url + "/mcp") as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            seen.extend(t.name for t in (await session.list_tools()).tools)
            result = await session.call_tool("search_docs", {"query": "install with pip"})
            seen.append("error" if result.is_error else "searched")

    anyio.run(main)
    return seen


def test_one_clients_flood_gets_its_share_and_another_agent_is_unaffected(
    server: RunningServer,
) -> None:
    with client_from("127.0.0.2") as flood:
        answers = [open_session(flood, server.base_url) for _ in range(20)]
    statuses = [r.status_code for r in answers]
    assert statuses[:PER_CLIENT] == [200] * PER_CLIENT
    assert set(statuses[PER_CLIENT:]) == {429}, statuses
    refused = answers[-1]
    assert "open sessions from one client" in refused.json()["error"]["message"]
    assert int(refused.headers["retry-after"]) >= 1
    seen = agent_works(server.base_url)
    assert "search_docs" in seen and seen[-1] == "searched"
    # Many clients together stop at the total, not at the process's memory.
    statuses = []
    for n in range(3, 6):
        with client_from(f"127.0.0.{n}") as other:
            statuses += [open_session(other, server.base_url).status_code for _ in range(2)]
    assert statuses.count(200) == TOTAL - PER_CLIENT and 503 in statuses, statuses


def test_an_idle_session_is_ended_and_its_slot_freed(short_idle_server: RunningServer) -> None:
    server = short_idle_server
    with client_from("127.0.0.2") as flood:
        first = [open_session(flood, server.base_url) for _ in range(PER_CLIENT)]
        ids = [r.headers["mcp-session-id"] for r in first]
        assert open_session(flood, server.base_url).status_code == 429
        started = time.monotonic()
        while (answer := open_session(flood, server.base_url)).status_code == 429:
            assert time.monotonic() - started < WAIT, "idle sessions were never ended"
            time.sleep(0.2)  # polling the server's state, with a deadline
        assert answer.status_code == 200
        assert time.monotonic() - started >= IDLE_SECONDS * 0.5
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        old = flood.post(server.base_url + "/mcp", json=ping,
                         headers={**HEADERS, "mcp-session-id": ids[0]})
        assert old.status_code == 404, "the idle session is over"


def test_opening_a_session_counts_against_the_clients_call_cap(server: RunningServer) -> None:
    statuses: list[int] = []
    with client_from("127.0.0.7") as client:
        for _ in range(300):
            answer = open_session(client, server.base_url)
            statuses.append(answer.status_code)
            if answer.status_code != 200:
                break
            client.delete(server.base_url + "/mcp",  # closed at once: only the rate counts
                          headers={**HEADERS, "mcp-session-id": answer.headers["mcp-session-id"]})
    # A bucket of 120 a minute, refilled as the loop runs: refused past 120 openings.
    assert statuses[-1] == 429 and 121 <= len(statuses) < 300, len(statuses)
    body: Any = json.loads(answer.text)
    assert "rate cap" in body["error"]["message"]
