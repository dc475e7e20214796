"""Many readers at once: concurrent streaming turns against a running runtime, and a
scripted provider that answers slowly, for the load test and `benchmarks/bench_load.py`.

Each turn is a real `POST /api/ask` read as Server-Sent Events to its `answer` event.
A turn's gate latency is the time from sending the request to its `retrieval` progress
event (the gate has decided); its total is the time to the `answer` event.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
from servers.openai_chat import OpenAIChatServer, Reply


@dataclass(frozen=True)
class TurnOutcome:
    ok: bool
    gate_ms: float
    total_ms: float
    kind: str = ""
    turn_id: str = ""
    bundle_hash: str = ""
    error: str = ""


class SlowChat(OpenAIChatServer):
    """The scripted Chat Completions server, waiting ``delay`` seconds before each reply
    (a provider's time to first token), so turns overlap as they do in production."""

    def __init__(self, *args: Any, delay: float = 0.2, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.delay = delay
        # socketserver listens with a backlog of 5: hundreds of connections opened at once
        # would wait on SYN retries. A real provider's front end accepts them.
        self._httpd.socket.listen(1024)
        report_error = self._httpd.handle_error

        def handle_error(request: Any, client_address: Any) -> None:
            # A runtime that stops resets its idle keep-alive connections: not a failure.
            if not isinstance(sys.exc_info()[1], ConnectionResetError):
                report_error(request, client_address)

        self._httpd.handle_error = handle_error  # type: ignore[method-assign]

    def reply_events(self, reply: Reply, number: int, body: dict[str, Any]) -> Iterator[str]:
        self.hold(self.delay)
        yield from super().reply_events(reply, number, body)


async def one_turn(client: httpx.AsyncClient, base_url: str, question: str) -> TurnOutcome:
    started = time.perf_counter()
    gate = 0.0
    event = ""
    outcome: TurnOutcome | None = None
    try:
        async with client.stream(
            "POST", base_url + "/api/ask", json={"question": question},
            headers={"Accept": "text/event-stream"},
        ) as response:
            if response.status_code != 200:
                return TurnOutcome(False, 0.0, 0.0, error=f"HTTP {response.status_code}")
            async for line in response.aiter_lines():
                if line.startswith("event: "):
                    event = line.removeprefix("event: ")
                elif line.startswith("data: "):
                    now = (time.perf_counter() - started) * 1000
                    if event == "progress" and not gate and '"stage":"retrieval"' in line:
                        gate = now
                    elif event == "answer":
                        data = json.loads(line.removeprefix("data: "))
                        outcome = TurnOutcome(True, gate, now, data["kind"], data["turn_id"],
                                              data["bundle_hash"])
                    elif event == "error":
                        outcome = TurnOutcome(False, gate, now, error=line)
            # Read to the stream's end, as the widget does: the connection is then reused
            # for the next turn instead of closed and opened again.
    except httpx.HTTPError as exc:
        return TurnOutcome(False, gate, 0.0, error=type(exc).__name__)
    return outcome or TurnOutcome(False, gate, 0.0, error="the stream ended without an answer event")


async def run_load(
    base_url: str, turns: int, concurrency: int, question: str, timeout: float = 120.0,
    local_address: str | None = None,
) -> list[TurnOutcome]:
    """``turns`` turns from ``concurrency`` readers streaming at once, each reader asking
    again as soon as its answer arrives (from ``local_address`` when given: loopback has
    all of 127.0.0.0/8, so readers can come from several client addresses).

    Each reader has a client and one connection of its own, as each reader's browser
    does. (One client pooling every reader's connection would also cost this process
    time quadratic in the readers: httpcore scans its whole pool for each request.)"""
    outcomes: list[TurnOutcome] = []
    left = turns

    async def reader() -> None:
        nonlocal left
        one = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        transport = httpx.AsyncHTTPTransport(limits=one, local_address=local_address)
        async with httpx.AsyncClient(transport=transport, timeout=timeout) as client:
            while left > 0:
                left -= 1
                outcomes.append(await one_turn(client, base_url, question))

    await asyncio.gather(*(reader() for _ in range(concurrency)))
    return outcomes


def percentile(values: list[float], share: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


@dataclass(frozen=True)
class LoadSummary:
    turns: int
    errors: int
    seconds: float
    gate_p50: float
    gate_p99: float
    total_p50: float
    total_p99: float

    @property
    def per_second(self) -> float:
        return self.turns / self.seconds if self.seconds else 0.0


def summarise(outcomes: list[TurnOutcome], seconds: float) -> LoadSummary:
    good = [o for o in outcomes if o.ok]
    gates = [o.gate_ms for o in good]
    totals = [o.total_ms for o in good]
    return LoadSummary(
        turns=len(outcomes),
        errors=len(outcomes) - len(good),
        seconds=seconds,
        gate_p50=statistics.median(gates) if gates else 0.0,
        gate_p99=percentile(gates, 0.99),
        total_p50=statistics.median(totals) if totals else 0.0,
        total_p99=percentile(totals, 0.99),
    )
