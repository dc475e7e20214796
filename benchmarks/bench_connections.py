"""The connection layer of `docpilot serve` under a hostile client and under load: idle and
slowloris connections, and `/api/health` and `/metrics` polled while 200 readers stream.

`docpilot serve` runs as its own process on the built site, with `/metrics` on, records
on (SQLite) and one OpenAI-compatible provider: the tests' scripted server in this
process, waiting ``--delay`` seconds (default 0.2) before each reply.

- idle: ``--idle`` connections that send nothing, from ``--idle-clients`` addresses
  (127.0.0.2 on; ten by default, so each stays under the per-client cap and all are held
  open until the head deadline; 1: one client, whose connections past its cap are refused),
  and ``--slow`` from one more address that send a request head one byte every ``--drip``
  seconds; meanwhile another client (127.0.0.1) polls a page, `/api/health` and `/metrics`
  ``--polls`` times each: their statuses, p50/p99 latency, and the most open connections
  health reported. Then how many of the hostile connections the server has closed, and
  after how long (measured up to ``--hold`` seconds);
- readers: ``--readers`` readers (default 200, spread over ten loopback source addresses,
  as that many people are) stream `POST /api/ask` for ``--turns`` turns, each asking again
  as soon as its answer arrives (the provider takes ``--delay`` seconds, so the streams stay
  open that long); meanwhile a page, `/api/health` and `/metrics` are polled every
  ``--every`` seconds on fresh connections: statuses, p50/p99 latency, and the most API
  requests (streams) health reported open at once.

The site is example-site (built here); ``--smoke`` uses a three-page site, 20 idle
connections, 20 readers and 60 turns. Run:
``.venv/bin/python benchmarks/bench_connections.py [--smoke]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(HERE))
from bench_load import config_for, rss_mb  # noqa: E402
from common import tree_state  # noqa: E402
from corpora import EXAMPLE_SITE, mkdocs_build  # noqa: E402
from docpilot_runtime.bundle.read import load_bundle  # noqa: E402
from load_driver import SlowChat, percentile, run_load  # noqa: E402
from servers.openai_chat import answer_reply  # noqa: E402
from servers.processes import ServeProcess  # noqa: E402
from small_site import CACHE, INSTALL, INSTALL_QUESTION, PROXY, build_small_site  # noqa: E402

EXAMPLE_QUESTION = "How do I exclude a page from the assistant?"
HOSTILE = "127.0.0.2"  # the flooding client's source address; probes come from 127.0.0.1
TOKEN_ENV = "DOCPILOT_BENCH_METRICS_TOKEN"
TOKEN = "bench-metrics-token"


@dataclass
class Probes:
    """Statuses and latencies (ms) of one endpoint's polls."""

    statuses: Counter[str] = field(default_factory=Counter)
    millis: list[float] = field(default_factory=list)
    # The most connections open, and API requests served, that a health answer reported.
    peak_open: int = 0
    peak_api: int = 0

    def row(self, name: str) -> str:
        codes = ", ".join(f"{code} × {n}" for code, n in sorted(self.statuses.items()))
        ok = self.millis
        return (f"| {name} | {sum(self.statuses.values())} | {codes} | "
                f"{percentile(ok, 0.5):.1f} | {percentile(ok, 0.99):.1f} | {max(ok, default=0):.1f} |")


def get_status(port: int, path: str, timeout: float = 30.0) -> tuple[int, bytes]:
    """One GET on a fresh connection from 127.0.0.1, read to the end of its response (raw
    sockets: an HTTP client's own set-up would dwarf a millisecond answer): status, body."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n"
                     f"Authorization: Bearer {TOKEN}\r\n\r\n".encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    if not data.startswith(b"HTTP/1.1 "):
        raise ConnectionError("no HTTP response")
    return int(data.split(b" ", 2)[1]), data.partition(b"\r\n\r\n")[2]


def poll(port: int, path: str, probes: Probes) -> None:
    """One poll: its status (or the error's name), its latency, and for health the
    connection counts it reports."""
    started = time.perf_counter()
    try:
        status, body = get_status(port, path)
    except OSError as exc:
        probes.statuses[type(exc).__name__] += 1
    else:
        probes.statuses[str(status)] += 1
        if path == "/api/health" and status == 200:
            # (a runtime older than the connection bounds reports no counts)
            counts = json.loads(body).get("connections", {})
            probes.peak_open = max(probes.peak_open, counts.get("open", 0))
            probes.peak_api = max(probes.peak_api, counts.get("api_requests", 0))
    probes.millis.append((time.perf_counter() - started) * 1000)


# ---------------------------------------------------------------------- idle flood


@dataclass
class Hostile:
    """The flooding client's sockets and when the server closed each (None: still open)."""

    sockets: list[socket.socket]
    opened: float
    closed_after: list[float | None]


def hostile_address(n: int, idle: int, clients: int) -> str:
    """The source address of hostile connection ``n``: the idle ones dealt over ``clients``
    addresses from 127.0.0.2, the slowloris ones (past ``idle``) from the next."""
    return f"127.0.0.{2 + (n % clients if n < idle else clients)}"


def open_hostile(port: int, idle: int, slow: int, clients: int) -> Hostile:
    sockets = []
    for n in range(idle + slow):
        sock = socket.socket()
        sock.bind((hostile_address(n, idle, clients), 0))
        sock.settimeout(10)
        try:
            sock.connect(("127.0.0.1", port))
        except OSError:
            sock.close()
            continue
        sockets.append(sock)
    return Hostile(sockets, time.monotonic(), [None] * len(sockets))


def watch_hostile(hostile: Hostile, slow: int, drip: float, hold: float) -> None:
    """Until ``hold`` seconds have passed: the last ``slow`` sockets send a request head a
    byte at a time; every socket's end (EOF or reset by the server) is timed."""
    head = b"GET / HTTP/1.1\r\nHost: x\r\nX-Padding: " + b"a" * 4096
    sent = 0
    slow_from = len(hostile.sockets) - slow
    for sock in hostile.sockets:
        sock.setblocking(False)
    while time.monotonic() - hostile.opened < hold:
        for i, sock in enumerate(hostile.sockets):
            if hostile.closed_after[i] is not None:
                continue
            try:
                if i >= slow_from and sent < len(head):
                    sock.send(head[sent : sent + 1])
                data = sock.recv(4096)
                if not data or data.startswith(b"HTTP/"):  # closed, or answered and closing
                    hostile.closed_after[i] = time.monotonic() - hostile.opened
            except BlockingIOError:
                pass
            except OSError:
                hostile.closed_after[i] = time.monotonic() - hostile.opened
        sent += 1
        if all(c is not None for c in hostile.closed_after):
            return
        time.sleep(drip)


def idle_phase(
    port: int, page: str, args: argparse.Namespace
) -> tuple[dict[str, Probes], Hostile]:
    hostile = open_hostile(port, args.idle, args.slow, args.idle_clients)
    watcher = threading.Thread(target=watch_hostile,
                               args=(hostile, args.slow, args.drip, args.hold), daemon=True)
    watcher.start()
    probes = {name: Probes() for name in (page, "/api/health", "/metrics")}
    for _ in range(args.polls):
        for path, counts in probes.items():
            poll(port, path, counts)
    watcher.join()
    for sock in hostile.sockets:
        sock.close()
    return probes, hostile


# ---------------------------------------------------------------------- readers


def poll_until_told(port: int, page: str, every: float) -> None:
    """The poller's own process (``--poll-port``): poll a page, health and metrics every ``every``
    seconds until stdin closes, then print the results as JSON. A process of its own, so
    the readers' event loop in this one never delays a poll."""
    probes = {path: Probes() for path in (page, "/api/health", "/metrics")}
    while not select.select([sys.stdin], [], [], every)[0]:
        for path, counts in probes.items():
            poll(port, path, counts)
    json.dump({path: {"statuses": dict(p.statuses), "millis": p.millis,
                      "peak_open": p.peak_open, "peak_api": p.peak_api}
               for path, p in probes.items()}, sys.stdout)


async def readers_phase(
    base_url: str, port: int, page: str, args: argparse.Namespace, question: str
) -> tuple[dict[str, Probes], int, Counter[str], float]:
    poller = subprocess.Popen(
        [sys.executable, __file__, "--poll-port", str(port), "--poll-page", page,
         "--every", str(args.every)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    started = time.perf_counter()
    groups = 10
    shares = [args.readers // groups + (i < args.readers % groups) for i in range(groups)]
    turns = [args.turns // groups + (i < args.turns % groups) for i in range(groups)]
    outcomes = await asyncio.gather(*(
        run_load(base_url, t, r, question, local_address=f"127.0.0.{10 + i}")
        for i, (t, r) in enumerate(zip(turns, shares, strict=True)) if r
    ))
    seconds = time.perf_counter() - started
    flat = [o for group in outcomes for o in group]
    out, _ = poller.communicate("", timeout=120)
    probes = {}
    for path, data in json.loads(out).items():
        probes[path] = Probes(Counter(data["statuses"]), data["millis"], data["peak_open"],
                              data["peak_api"])
    return probes, len(flat), Counter(o.error for o in flat if not o.ok), seconds


# ---------------------------------------------------------------------- MCP flood

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "bench", "version": "0"}}}


def open_mcp_session(port: int, source: str) -> int:
    """One `initialize` POSTed to /mcp from ``source`` on a fresh connection: its status."""
    body = json.dumps(INITIALIZE).encode()
    with socket.socket() as sock:
        sock.bind((source, 0))
        sock.settimeout(30)
        sock.connect(("127.0.0.1", port))
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n"
                     b"Accept: application/json, text/event-stream\r\n"
                     b"Content-Type: application/json\r\n"
                     + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/") else 0


def agent_seconds(port: int) -> tuple[int, float]:
    """Another agent (127.0.0.1) opening a session: its status and seconds."""
    started = time.perf_counter()
    status = open_mcp_session(port, "127.0.0.1")
    return status, time.perf_counter() - started


@dataclass(frozen=True)
class Flood:
    statuses: Counter[str]
    seconds: float
    agent_status: int
    agent_ms: float
    rss_before: float
    rss_after: float


def mcp_phase(port: int, pid: int, sessions: int) -> Flood:
    """One client (127.0.0.2) opens ``sessions`` sessions as fast as it can; then another
    agent opens one. Statuses, seconds, and the runtime's RSS before and after."""
    before = rss_mb(pid)
    started = time.perf_counter()
    statuses = Counter(str(open_mcp_session(port, HOSTILE)) for _ in range(sessions))
    seconds = time.perf_counter() - started
    agent_status, agent = agent_seconds(port)
    return Flood(statuses, seconds, agent_status, agent * 1000, before, rss_mb(pid))


def connections_report(port: int) -> dict[str, int]:
    """`/api/health`'s connection counts (refused, timed out since start)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"GET /api/health HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    report: dict[str, int] = json.loads(data.split(b"\r\n\r\n", 1)[1]).get(
        "connections", {"refused": 0, "timed_out": 0})
    return report


def probe_table(title: str, probes: dict[str, Probes]) -> None:
    print(f"\n{title}\n")
    print("| endpoint | polls | statuses | p50 ms | p99 ms | max ms |")
    print("|---|---:|---|---:|---:|---:|")
    for name, p in probes.items():
        print(p.row(name))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--idle", type=int, default=200, help="idle connections")
    parser.add_argument("--idle-clients", type=int, default=10,
                        help="addresses the idle connections come from")
    parser.add_argument("--slow", type=int, default=20, help="slowloris connections")
    parser.add_argument("--drip", type=float, default=1.0, help="seconds between their bytes")
    parser.add_argument("--hold", type=float, default=40.0, help="seconds the flood is watched")
    parser.add_argument("--polls", type=int, default=20, help="polls per endpoint, idle phase")
    parser.add_argument("--readers", type=int, default=200)
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--every", type=float, default=0.1, help="seconds between polls")
    parser.add_argument("--delay", type=float, default=0.2, help="provider seconds per reply")
    parser.add_argument("--max-connections", type=int, default=200)
    parser.add_argument("--mcp", type=int, default=2000,
                        help="MCP sessions one client tries to open (0: no MCP phase)")
    parser.add_argument("--smoke", action="store_true", help="a small site and small counts")
    parser.add_argument("--log", type=Path, help="keep the runtime's log in this file")
    parser.add_argument("--poll-port", type=int, help=argparse.SUPPRESS)  # the poller's mode
    parser.add_argument("--poll-page", default="/", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.poll_port:
        poll_until_told(args.poll_port, args.poll_page, args.every)
        return
    if args.smoke:
        args.idle, args.idle_clients, args.slow, args.hold, args.polls = 20, 2, 4, 12.0, 3
        args.readers, args.turns, args.every, args.mcp = 20, 60, 0.2, 30
    os.environ[TOKEN_ENV] = TOKEN
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        site = folder / "site"
        if args.smoke:
            build_small_site(site, folder / "cache", [INSTALL, CACHE, PROXY])
            question, corpus, page = INSTALL_QUESTION, "a three-page site", "/install/"
        else:
            mkdocs_build(EXAMPLE_SITE / "mkdocs.yml", "--site-dir", str(site))
            question, corpus, page = EXAMPLE_QUESTION, "example-site", "/"
        cited = load_bundle(site).units[0].id
        steps = [answer_reply(markdown=f"See the docs [[{cited}]].")] * (args.turns + 10)
        with SlowChat(steps, delay=args.delay) as model:
            config = config_for(folder, model, args.max_connections, limits="",
                                extra=f'[metrics]\nenabled = true\ntoken_env = "{TOKEN_ENV}"\n')
            with ServeProcess(site, config, args.log or folder / "serve.log") as runtime:
                idle, hostile = idle_phase(runtime.port, page, args)
                flood = mcp_phase(runtime.port, runtime.process.pid, args.mcp) if args.mcp else None
                before = connections_report(runtime.port)
                readers, turns, errors, seconds = asyncio.run(
                    readers_phase(runtime.base_url, runtime.port, page, args, question))
                after = connections_report(runtime.port)
    load = os.getloadavg()[0]
    print(f"\n## Connection benchmark on tree {tree_state()}, {time.strftime('%Y-%m-%d')}, "
          f"{corpus}, max_connections {args.max_connections}, 1-minute load {load:.1f}\n")
    closed = sorted(c for c in hostile.closed_after if c is not None)
    probe_table(f"While {len(hostile.sockets)} connections hang ({args.idle} idle from "
                f"{args.idle_clients} addresses, {args.slow} dripping a head from one more; "
                f"health saw at most {idle['/api/health'].peak_open} open):", idle)
    print(f"\n| hostile connections | opened | closed by the server within {args.hold:g} s "
          "| first closed s | last closed s |")
    print("|---|---:|---:|---:|---:|")
    print(f"| {args.idle} idle + {args.slow} slowloris | {len(hostile.sockets)} | {len(closed)} | "
          f"{closed[0] if closed else float('nan'):.1f} | "
          f"{closed[-1] if closed else float('nan'):.1f} |")
    failed = ", ".join(f"{n} × {error}" for error, n in errors.most_common()) or "none"
    probe_table(f"While {args.readers} readers stream {turns} turns from ten addresses "
                f"({turns / seconds:.1f} turns/s; failed turns: {failed}; health saw at "
                f"most {readers['/api/health'].peak_api} streams at once), polled from "
                "another process:", readers)
    if flood is not None:
        codes = ", ".join(f"{code} × {n}" for code, n in sorted(flood.statuses.items()))
        print(f"\nOne client opening {args.mcp} MCP sessions as fast as it can "
              f"({flood.seconds:.1f} s):\n")
        print("| statuses | RSS before MB | RSS after MB | another agent's initialize |")
        print("|---|---:|---:|---|")
        print(f"| {codes} | {flood.rss_before:.0f} | {flood.rss_after:.0f} | "
              f"{flood.agent_status} in {flood.agent_ms:.1f} ms |")
    print(f"\nDuring the readers the server refused {after['refused'] - before['refused']} "
          f"connections and closed {after['timed_out'] - before['timed_out']} for a late "
          "request head.")


if __name__ == "__main__":
    main()
