"""Connections a hostile client holds open (issue 27, finding 1), against a real `docpilot
serve` process on real sockets: idle connections and request heads sent a byte at a time
are closed by the server itself, one client cannot take every connection, and while the
connection limit is full the site, `/api/health` and `/metrics` still answer (the API's
turns answer 503). The flooding client connects from 127.0.0.2, the probing one from
127.0.0.1: loopback has the whole of 127.0.0.0/8, so they are two clients."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from docpilot_runtime.serve.app import build_app
from docpilot_runtime.settings.limits import LimitSettings
from docpilot_runtime.settings.load import Settings
from docpilot_runtime.settings.metrics import MetricsSettings
from docpilot_runtime.turn import load_runtime
from servers.processes import ServeProcess
from servers.runtime import serve_app
from small_site import INSTALL_QUESTION

HOSTILE = "127.0.0.2"
HEAD_SECONDS = 1.0
PER_CLIENT = 8
MAX_CONNECTIONS = 12
TOKEN_ENV = "DOCPILOT_TEST_METRICS_TOKEN"
TOKEN = "connections-test-token"
WAIT = 30.0  # a bound on every wait below, never a sleep


def serve_small_site(site: Path, folder: Path, limits: str) -> Iterator[ServeProcess]:
    """`docpilot serve` on ``site`` with MAX_CONNECTIONS, PER_CLIENT, ``limits`` lines and
    metrics on; records off."""
    config = folder / "docpilot.toml"
    config.write_text(
        "[records]\nenabled = false\n"
        f"[limits]\nmax_connections = {MAX_CONNECTIONS}\n"
        f"max_connections_per_client = {PER_CLIENT}\n{limits}"
        f'[metrics]\nenabled = true\ntoken_env = "{TOKEN_ENV}"\n', encoding="utf-8")
    os.environ[TOKEN_ENV] = TOKEN
    try:
        with ServeProcess(site, config, folder / "serve.log") as process:
            yield process
    finally:
        os.environ.pop(TOKEN_ENV, None)  # (both module servers set it)


@pytest.fixture(scope="module")
def runtime(small_site: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """A short head deadline (HEAD_SECONDS), so the deadline tests are quick."""
    yield from serve_small_site(small_site, tmp_path_factory.mktemp("serve"),
                                f"request_head_seconds = {HEAD_SECONDS}\n")


@pytest.fixture(scope="module")
def patient_runtime(
    small_site: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServeProcess]:
    """The default 10 s head deadline: idle connections stay open long enough to probe the
    runtime while they are all held."""
    yield from serve_small_site(small_site, tmp_path_factory.mktemp("patient"), "")


def connect(port: int, source: str = "127.0.0.1") -> socket.socket:
    sock = socket.socket()
    sock.bind((source, 0))
    sock.settimeout(WAIT)
    sock.connect(("127.0.0.1", port))
    return sock


def request(port: int, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
    """One request on a fresh connection from 127.0.0.1, read to its end."""
    with connect(port) as sock:
        head = (f"{method} {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n"
                f"Authorization: Bearer {TOKEN}\r\n")
        if body:
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        sock.sendall(head.encode() + b"\r\n" + body)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    status = int(data.split(b" ", 2)[1])
    return status, data.split(b"\r\n\r\n", 1)[1]


def ended_with(sock: socket.socket) -> bytes:
    """Everything the server sent before it closed ``sock`` (b"" for a silent close);
    raises TimeoutError if it is still open after WAIT seconds."""
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except ConnectionResetError:
        pass
    return data


def test_idle_connections_from_one_client_leave_the_site_health_and_metrics_answering(
    runtime: ServeProcess,
) -> None:
    hostile = [connect(runtime.port, HOSTILE) for _ in range(3 * PER_CLIENT)]
    try:
        started = time.monotonic()
        # Past its cap the client's connections are answered 503 and closed at once.
        refused = [s for s in hostile[PER_CLIENT:]]
        for sock in refused:
            reply = ended_with(sock)
            assert reply.startswith(b"HTTP/1.1 503"), reply[:80]
            assert b"open connections from one client" in reply
        # Another client is served meanwhile: a page, health (which reports the
        # connections) and metrics.
        status, body = request(runtime.port, "GET", "/api/health")
        assert status == 200
        report = json.loads(body)["connections"]
        assert report["limit"] == MAX_CONNECTIONS and report["refused"] >= 2 * PER_CLIENT
        assert request(runtime.port, "GET", "/install/")[0] == 200
        assert request(runtime.port, "GET", "/metrics")[0] == 200
        # The idle ones within the cap are closed once the head deadline passes: silently,
        # since they sent nothing.
        for sock in hostile[:PER_CLIENT]:
            assert ended_with(sock) == b""
        assert time.monotonic() - started < HEAD_SECONDS + 10
    finally:
        for sock in hostile:
            sock.close()


def test_idle_connections_from_many_clients_past_the_limit_leave_the_runtime_answering(
    patient_runtime: ServeProcess,
) -> None:
    """More idle connections than `max_connections`, from three clients each within its
    cap, all held open (none refused): pages, health and metrics still answer 200. Before
    the connection bounds, uvicorn's `limit_concurrency` counted them and answered 503."""
    port = patient_runtime.port
    clients = ["127.0.0.2", "127.0.0.3", "127.0.0.4"]
    hostile = [connect(port, source) for source in clients for _ in range(PER_CLIENT)]
    assert len(hostile) > MAX_CONNECTIONS
    try:
        assert request(port, "GET", "/install/")[0] == 200
        assert request(port, "GET", "/metrics")[0] == 200
        status, body = request(port, "GET", "/api/health")
        assert status == 200
        report = json.loads(body)["connections"]
        # Health counts every hostile one (and itself) open: they were held throughout.
        assert report["open"] >= len(hostile) + 1 and report["refused"] == 0, report
        # A turn is answered too: they hold no API request.
        status, body = request(port, "POST", "/api/ask",
                               json.dumps({"question": INSTALL_QUESTION}).encode())
        assert status == 200, body
        # Then the head deadline closes them all, silently.
        for sock in hostile:
            assert ended_with(sock) == b""
    finally:
        for sock in hostile:
            sock.close()


def drip(sock: socket.socket, stop: threading.Event) -> None:
    """Send a request head a byte at a time, each byte soon after the last, until the
    server closes the connection or ``stop`` is set."""
    head = b"GET /install/ HTTP/1.1\r\nHost: test\r\nX-Padding: " + b"a" * 1000
    for byte in head:
        if stop.wait(HEAD_SECONDS / 10):
            return
        try:
            sock.send(bytes([byte]))
        except OSError:
            return


def test_a_request_head_sent_a_byte_at_a_time_is_cut_off_with_a_408(
    runtime: ServeProcess,
) -> None:
    socks = [connect(runtime.port, HOSTILE) for _ in range(3)]
    stop = threading.Event()
    drippers = [threading.Thread(target=drip, args=(s, stop)) for s in socks]
    started = time.monotonic()
    for thread in drippers:
        thread.start()
    try:
        for sock in socks:
            reply = ended_with(sock)
            assert reply.startswith(b"HTTP/1.1 408"), reply[:80]
            assert b"request head did not arrive" in reply
        # Each kept sending the whole time: the deadline is per head, not per byte.
        assert HEAD_SECONDS * 0.9 < time.monotonic() - started < HEAD_SECONDS + 10
    finally:
        stop.set()
        for thread in drippers:
            thread.join(WAIT)
        for sock in socks:
            sock.close()
    # Closed, the slots are free again: a question is answered.
    status, body = request(runtime.port, "POST", "/api/ask",
                           json.dumps({"question": INSTALL_QUESTION}).encode())
    assert status == 200, body
    assert json.loads(body)["kind"] in ("answer", "passages")


def test_a_keep_alive_connection_waiting_for_its_next_request_has_the_deadline_too(
    runtime: ServeProcess,
) -> None:
    with connect(runtime.port, HOSTILE) as sock:
        sock.sendall(b"GET /install/ HTTP/1.1\r\nHost: test\r\n\r\n")
        first = sock.recv(65536)
        while b"\r\n\r\n" not in first:
            first += sock.recv(65536)
        head, body = first.split(b"\r\n\r\n", 1)
        assert head.startswith(b"HTTP/1.1 200")
        length = int(head.lower().split(b"content-length: ", 1)[1].split(b"\r\n", 1)[0])
        while len(body) < length:  # the whole page, so the connection waits for the next
            body += sock.recv(65536)
        sock.sendall(b"GET /api/hea")  # the next head never finishes
        assert ended_with(sock).startswith(b"HTTP/1.1 408")


# ---------------------------------------------------------------------- the reserve


def open_slow_request(port: int, path: str = "/api/ask") -> socket.socket:
    """A request whose head is complete and whose body never finishes: it holds a
    connection (and its turn's task) until the body deadline."""
    sock = connect(port)
    sock.sendall(
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Content-Length: 100\r\n\r\n".encode() + b'{"question": "')
    return sock


def test_past_the_limit_the_api_answers_503_and_pages_and_health_are_served(
    small_site: Path,
) -> None:
    caps = LimitSettings(body_read_seconds=60, max_connections=2, max_connections_per_client=0)
    settings = Settings(caps=caps)
    app = build_app(load_runtime(small_site, settings), small_site)
    with serve_app(app, settings=settings) as running:
        port = running.server.servers[0].sockets[0].getsockname()[1]
        held = [open_slow_request(port) for _ in range(2)]
        try:
            state = running.server.server_state
            deadline = time.monotonic() + WAIT
            while len(state.tasks) < 2 and time.monotonic() < deadline:
                time.sleep(0.01)  # polled: the server accepts and parses them in its thread
            assert len(state.tasks) == 2, "the held requests were never served"
            status, body = request(port, "POST", "/api/ask", b'{"question": "install?"}')
            assert status == 503
            error = json.loads(body)["error"]
            assert error["field"] == "connections" and error["limit"] == 2
            status, body = request(port, "GET", "/api/health")
            assert status == 200 and json.loads(body)["connections"]["full"] is True
            assert request(port, "GET", "/install/")[0] == 200
        finally:
            for sock in held:
                sock.close()


# ---------------------------------------------------------------------- the front door


def test_health_and_metrics_answer_while_the_main_loop_is_blocked(
    small_site: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`docpilot serve` accepts in the front door's thread: health and metrics are served
    there, so they answer while the main loop is stuck (here: blocked on purpose for a
    while, as a long burst of work would) and a page waits for it."""
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    settings = Settings(metrics=MetricsSettings(enabled=True, token_env=TOKEN_ENV))
    app = build_app(load_runtime(small_site, settings), small_site)
    with serve_app(app, settings=settings, front_door=True) as running:
        port = running.server.listeners[0].getsockname()[1]  # type: ignore[attr-defined]
        assert request(port, "GET", "/install/")[0] == 200
        main_loop = running.server.door.main  # type: ignore[attr-defined]
        blocked = threading.Event()
        block_seconds = 4.0

        def block() -> None:
            blocked.set()
            time.sleep(block_seconds)  # the main loop does nothing else meanwhile

        main_loop.call_soon_threadsafe(block)
        assert blocked.wait(WAIT)
        started = time.monotonic()
        status, body = request(port, "GET", "/api/health")
        health_seconds = time.monotonic() - started
        assert status == 200 and json.loads(body)["connections"]["limit"] == 200
        assert request(port, "GET", "/metrics")[0] == 200
        waited = time.monotonic() - started
        assert request(port, "GET", "/install/")[0] == 200  # served once the loop is back
        page_seconds = time.monotonic() - started
        assert health_seconds < block_seconds / 2 and waited < block_seconds / 2
        assert page_seconds >= block_seconds * 0.9
