"""Abandoned turns: how fast a reader who leaves ends the provider call, and what is left.

Builds example-site, serves it with the runtime on a real uvicorn (in a thread of this
process) with one Anthropic-protocol provider: the scripted local server of the tests,
streaming text forever (one chunk per 20 ms) until its client closes. Each turn: POST
/api/ask (SSE or plain JSON) over a raw socket, wait until the provider has begun
streaming this turn's reply, close the socket, then wait until the provider sees its
stream closed by the runtime. Reported per kind, median / p95 / max in ms:

- ask to provider streaming: request sent to the provider's first byte of reply;
- reader gone to provider closed: socket closed to the provider seeing its stream end.

Then the connections still checked out of the provider client's pool, and one answered
turn's wall time. Run: ``.venv/bin/python benchmarks/bench_disconnect.py [--sse 300]
[--json 100]``; ``--quick`` runs 20 of each.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(HERE))
from common import tree_state  # noqa: E402
from corpora import EXAMPLE_SITE, mkdocs_build  # noqa: E402
from docpilot_runtime.providers import ProviderSettings  # noqa: E402
from docpilot_runtime.serve.app import create_app  # noqa: E402
from docpilot_runtime.settings.limits import LimitSettings  # noqa: E402
from docpilot_runtime.settings.load import Settings  # noqa: E402
from docpilot_runtime.shared.types import AskRequest  # noqa: E402
from docpilot_runtime.sites.loader import load_site  # noqa: E402
from servers.anthropic_messages import AnthropicServer, Fault, answer_reply  # noqa: E402
from servers.runtime import RunningServer, checked_out_connections, serve_app  # noqa: E402

QUESTION = "How do I exclude a page from the assistant?"
ENDLESS = Fault("slow", seconds=600.0, interval=0.02)
WAIT = 30.0


def ask_bytes(host: str, stream: bool) -> bytes:
    body = json.dumps({"question": QUESTION}).encode()
    accept = "text/event-stream" if stream else "application/json"
    head = (
        f"POST /api/ask HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Accept: {accept}\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def abandon(running: RunningServer, server: AnthropicServer, stream: bool) -> tuple[float, float]:
    """One abandoned turn: (ask to provider streaming, reader gone to provider closed) s."""
    server.script(ENDLESS)
    number = len(server.requests) + 1
    parts = urlsplit(running.base_url)
    reader = socket.create_connection((parts.hostname, parts.port))
    started = time.perf_counter()
    reader.sendall(ask_bytes(parts.netloc, stream))
    if not server.wait_until(lambda s: number in s.started_streams, WAIT):
        raise RuntimeError(f"provider request {number} never started streaming")
    streaming = time.perf_counter()
    reader.close()
    if not server.wait_until(lambda s: number in s.closed_by_client, WAIT):
        raise RuntimeError(f"provider stream {number} was never closed by the runtime")
    return streaming - started, time.perf_counter() - streaming


def row(label: str, seconds: list[float]) -> str:
    ms = sorted(s * 1000 for s in seconds)
    p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
    return f"| {label} | {len(ms)} | {statistics.median(ms):.1f} | {p95:.1f} | {ms[-1]:.1f} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sse", type=int, default=300, help="abandoned SSE turns")
    parser.add_argument("--json", type=int, default=100, help="abandoned plain-JSON turns")
    parser.add_argument("--quick", action="store_true", help="20 of each")
    parser.add_argument("--smoke", action="store_true", help="5 of each (a smoke)")
    args = parser.parse_args()
    few = 5 if args.smoke else 20 if args.quick else None
    counts = {"SSE": few or args.sse, "JSON": few or args.json}

    with tempfile.TemporaryDirectory() as tmp:
        site_dir = Path(tmp) / "site"
        mkdocs_build(EXAMPLE_SITE / "mkdocs.yml", "--site-dir", str(site_dir))
        site = load_site(site_dir, "/")
        first = site.bundle.units[site.retrieve(AskRequest(QUESTION)).model_order()[0]].id
        with AnthropicServer() as provider_server:
            provider = ProviderSettings(
                kind="anthropic", base_url=provider_server.base_url, model="bench", retries=0
            )
            # The rate caps off: every abandoned turn comes from one loopback address.
            no_caps = LimitSettings(answers_per_minute=0, answers_per_minute_per_client=0)
            app = create_app(site_dir, Settings(providers=(provider,), caps=no_caps))
            with serve_app(app) as running:
                began = time.perf_counter()
                samples = {
                    kind: [abandon(running, provider_server, kind == "SSE") for _ in range(n)]
                    for kind, n in counts.items()
                }
                abandoned_seconds = time.perf_counter() - began
                left = checked_out_connections(running)
                provider_server.script(answer_reply(markdown=f"Set `exclude` [[{first}]]."))
                asked = time.perf_counter()
                result = httpx.post(
                    f"{running.base_url}/api/ask", json={"question": QUESTION}, timeout=WAIT
                ).json()
                answered = time.perf_counter() - asked

    load = os.getloadavg()[0]
    print(
        f"\n## Disconnect benchmark on tree {tree_state()}, {time.strftime('%Y-%m-%d')}, "
        f"{os.cpu_count()} CPUs, 1-minute load {load:.1f}\n"
    )
    print("| measurement (ms) | turns | median | p95 | max |")
    print("|---|---:|---:|---:|---:|")
    for kind, pairs in samples.items():
        print(row(f"{kind}: ask to provider streaming", [a for a, _ in pairs]))
        print(row(f"{kind}: reader gone to provider closed", [b for _, b in pairs]))
    total = sum(counts.values())
    print(
        f"\n{total} abandoned turns in {abandoned_seconds:.1f} s; connections still checked "
        f"out of the provider pool afterwards: {left}; the next turn: kind "
        f"`{result.get('kind')}` in {answered * 1000:.0f} ms."
    )


if __name__ == "__main__":
    main()
