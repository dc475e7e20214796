"""Serving hygiene over real HTTP: security headers on every response, no dotfile or path
outside the site ever served, slow bodies and connection floods cut off, JSON 500s
without tracebacks, and log lines without query strings or credentials."""

from __future__ import annotations

import http.client
import logging
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from docpilot_runtime.serve.app import build_app, create_app
from docpilot_runtime.serve.security_headers import API_POLICY
from docpilot_runtime.serve.server import AccessLogWithoutQuery, RedactCredentials, redact
from docpilot_runtime.settings.headers import HeaderSettings
from docpilot_runtime.settings.limits import LimitSettings
from docpilot_runtime.settings.load import Settings, SettingsError, load_settings
from docpilot_runtime.turn import Runtime, load_runtime
from servers.runtime import RunningServer, example_settings, serve_app
from servers.runtime import example_server as example_server  # session fixture

# An AWS-shaped pair no vendor published (the detector exempts the documented examples).
KEY_ID = "AKIAQ7XK2M4P9RZT3WNB"
SECRET = "q8Zr4Lw9Xv2Nc7Bt5Hm1Kd6Fj3Gs0Ay8Pe4Ui7Oo"


@pytest.fixture(scope="module")
def client(example_server: RunningServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=example_server.base_url, timeout=60) as http:
        yield http


def raw_get(base_url: str, path: str) -> int:
    """GET ``path`` exactly as written (httpx would normalise ``..`` away)."""
    host, port = httpx.URL(base_url).host, httpx.URL(base_url).port
    connection = http.client.HTTPConnection(host, port, timeout=30)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


# ---------------------------------------------------------------------- headers


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/", 200),
        ("GET", "/docpilot/docpilot.js", 200),
        ("GET", "/no/such/page/", 404),
        ("GET", "/api/health", 200),
        ("GET", "/api/nowhere", 404),
        ("POST", "/api/ask", 415),
    ],
)
def test_every_response_carries_the_security_headers(
    client: httpx.Client, method: str, path: str, status: int
) -> None:
    response = client.request(method, path)
    assert response.status_code == status
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "strict-origin-when-cross-origin"
    policy = response.headers["content-security-policy"]
    if path.startswith("/api/"):
        assert policy == API_POLICY
    else:
        assert "frame-ancestors 'self'" in policy
        assert "'wasm-unsafe-eval'" in policy and "object-src 'none'" in policy


def test_the_page_policy_and_frame_ancestors_are_configurable(tmp_path: Path) -> None:
    path = tmp_path / "docpilot.toml"
    path.write_text(
        '[headers]\npage_policy = "default-src \'self\'"\n'
        "frame_ancestors = [\"https://portal.example\"]\n",
        encoding="utf-8",
    )
    headers = load_settings(path).headers
    assert headers.page_csp() == "default-src 'self'; frame-ancestors https://portal.example"
    assert HeaderSettings(frame_ancestors=()).page_csp().endswith("frame-ancestors 'none'")


@pytest.mark.parametrize(
    "body",
    ['page_policy = "a\\nb"', 'frame_ancestors = ["a; script-src *"]', "colour = 1"],
)
def test_bad_header_settings_name_the_file_and_table(tmp_path: Path, body: str) -> None:
    path = tmp_path / "docpilot.toml"
    path.write_text(f"[headers]\n{body}\n", encoding="utf-8")
    with pytest.raises(SettingsError, match=r"\[headers\]") as caught:
        load_settings(path)
    assert str(path) in str(caught.value)


# ---------------------------------------------------------------------- what is served


@pytest.fixture(scope="module")
def planted(example_site: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """A copy of example-site with files an unwary deploy leaves in (and next to) the site
    dir, served as `example_server` serves example-site (whose build other tests share)."""
    site = tmp_path_factory.mktemp("planted") / "site"
    shutil.copytree(example_site, site, symlinks=True)
    made = [
        site / ".env",
        site / ".git" / "config",
        site / "docpilot" / ".secret.swp",
        site.parent / "outside.txt",
    ]
    for path in made:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"TOKEN={SECRET}\n", encoding="utf-8")
    (site / "linked.txt").symlink_to(site.parent / "outside.txt")
    with serve_app(create_app(site, example_settings())) as running:
        yield running


@pytest.mark.parametrize(
    "path",
    [
        "/.env",
        "/.git/config",
        "/.git/",
        "/docpilot/.secret.swp",
        "/%2eenv",
        "/%2egit/config",
        "/../outside.txt",
        "/%2e%2e/outside.txt",
        "/docpilot/..%2f..%2foutside.txt",
        "/docpilot/%2e%2e/%2e%2e/outside.txt",
        "/linked.txt",
    ],
)
def test_dotfiles_and_paths_outside_the_site_are_404(planted: RunningServer, path: str) -> None:
    assert raw_get(planted.base_url, path) == 404


def test_the_site_itself_is_still_served_next_to_the_planted_files(
    planted: RunningServer,
) -> None:
    assert raw_get(planted.base_url, "/") == 200
    assert raw_get(planted.base_url, "/docpilot/docpilot.js") == 200


# ---------------------------------------------------------------------- failures


class BrokenHealth(Runtime):
    """A runtime whose health check fails with a message carrying reader text."""

    def health(self) -> dict[str, Any]:
        raise ValueError(f"leaked {SECRET}")


def test_an_uncaught_error_is_a_json_500_without_a_traceback(
    example_site: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    loaded = load_runtime(example_site, Settings())
    broken = BrokenHealth(sites=loaded.sites, settings=loaded.settings)
    with serve_app(build_app(broken, example_site)) as running:
        response = httpx.get(f"{running.base_url}/api/health")
    assert response.status_code == 500
    assert response.json()["error"]["status"] == 500
    assert response.headers["content-security-policy"] == API_POLICY
    logged = "\n".join(f"{r.getMessage()} {r.exc_text or ''}" for r in caplog.records)
    assert "ValueError" in logged
    assert SECRET not in logged and "Traceback" not in logged


# ---------------------------------------------------------------------- slow bodies, floods


def open_slow_request(base_url: str, path: str = "/api/ask") -> socket.socket:
    """A connection that sends its headers and part of the body, then nothing more."""
    url = httpx.URL(base_url)
    sock = socket.create_connection((url.host, url.port or 80), timeout=60)
    sock.sendall(
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Content-Length: 100\r\n\r\n".encode()
        + b'{"question": "'
    )
    return sock


def read_status(sock: socket.socket) -> int:
    data = b""
    while b"\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return int(data.split(b" ", 2)[1])


@pytest.fixture(scope="module")
def strict_server(example_site: Path) -> Iterator[RunningServer]:
    """example-site with a short body deadline and room for only two connections."""
    settings = Settings(caps=LimitSettings(body_read_seconds=0.5, max_connections=2))
    app = build_app(load_runtime(example_site, settings), example_site)
    with serve_app(app, settings=settings) as running:
        yield running


def test_a_body_that_never_finishes_is_a_408_naming_the_deadline(
    strict_server: RunningServer,
) -> None:
    sock = open_slow_request(strict_server.base_url)
    try:
        assert read_status(sock) == 408
    finally:
        sock.close()


def test_slow_feedback_is_cut_off_too(strict_server: RunningServer) -> None:
    sock = open_slow_request(strict_server.base_url, "/api/feedback")
    try:
        assert read_status(sock) == 408
    finally:
        sock.close()


# Past the connection limit the API answers 503 while pages and health are served:
# tests/serve/test_connections.py.


# ---------------------------------------------------------------------- logs


def test_the_access_log_has_no_query_string(
    example_site: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    access = logging.getLogger("uvicorn.access")
    only_path = AccessLogWithoutQuery()
    access.addFilter(only_path)
    try:
        app = build_app(load_runtime(example_site, Settings()), example_site)
        with serve_app(app, log_level="info") as running:
            httpx.get(f"{running.base_url}/api/health?token={SECRET}&q=my+question")
    finally:
        access.removeFilter(only_path)
    lines = [r.getMessage() for r in caplog.records if r.name == "uvicorn.access"]
    assert any("/api/health" in line for line in lines), lines
    assert not any(SECRET in line or "?" in line for line in lines)


def test_credentials_in_a_log_line_are_redacted() -> None:
    record = logging.LogRecord(
        "docpilot.test", logging.WARNING, __file__, 1,
        "provider said: %s", (f"bad key aws_secret_access_key = {SECRET}",), None,
    )
    assert RedactCredentials().filter(record)
    assert SECRET not in record.getMessage() and "[redacted" in record.getMessage()
    assert redact("nothing secret here") == "nothing secret here"
    assert KEY_ID not in redact(f"id {KEY_ID} and secret {SECRET}")


def test_docpilot_serve_logs_paths_without_queries_and_redacts_credentials(
    example_site: Path,
) -> None:
    """The real `docpilot serve` process: its whole log, after a secret was sent in a query
    string and in a path."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "docpilot_runtime.cli", "serve", str(example_site)]
    process = subprocess.Popen(
        [*command, "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:  # poll until it answers (start-up loads the bundle and the embedder)
            assert process.poll() is None, process.communicate()[1]
            try:
                if httpx.get(f"{base}/api/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "docpilot serve did not start"
            time.sleep(0.1)
        assert httpx.get(f"{base}/api/health?token={SECRET}").status_code == 200
        assert httpx.get(f"{base}/aws_secret_access_key={SECRET}").status_code == 404
        assert httpx.get(f"{base}/.env").headers["x-content-type-options"] == "nosniff"
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
        log = out + err  # uvicorn writes its access log to stdout
    assert "GET /api/health HTTP/1.1" in log, log
    assert "[redacted" in log
    assert SECRET not in log and "?token" not in log
