"""A bounded, seeded fuzz run over every endpoint of a real `docpilot serve` (issue 27): bodies
built from random JSON (valid shapes with hostile values, wrong types, deep nesting, huge
numbers, lone surrogates, credentials), random methods, content types, headers and paths
(traversal, encodings, control characters), signed and unsigned bundle reloads, MCP
JSON-RPC, and raw request heads that are not HTTP at all. The same seed gives the same run.

What must hold: no answer is a 5xx, the runtime's log has no traceback, and the runtime
still answers a question at the end."""

from __future__ import annotations

import json
import os
import random
import socket
import string
import time
from pathlib import Path
from typing import Any

import httpx
from docpilot_runtime.sites.source import (
    NONCE_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    signature,
)
from servers.processes import ServeProcess
from small_site import INSTALL_QUESTION

SEED = 2727
REQUESTS = 1500  # ~18 s after an ~8 s start at load 15 on 2 cores (reloads take most)
TOKEN_ENV, TOKEN = "DOCPILOT_FUZZ_METRICS_TOKEN", "fuzz-metrics-token"
SECRET_ENV, SECRET = "DOCPILOT_FUZZ_RELOAD_SECRET", "fuzz-reload-secret"
GITHUB = "ghp_" + "".join(random.Random(1).choices(string.ascii_letters + string.digits, k=36))

PATHS = ["/api/ask", "/api/feedback", "/api/health", "/api/bundle/reload", "/metrics", "/mcp",
         "/", "/install/", "/docpilot/bundle.msgpack", "/api/", "/api/nothing"]
ODD_PATHS = ["/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/.git/config", "/install/%00",
             "/install/..%2f..%2f", "//evil.example/", "/api/ask/" + GITHUB, "/\u00e9\u4e2d",
             "/a" * 300, "/install/?" + "q=" * 500, "/%ff%fe", "/docpilot/../../../x",
             "/.env", "/install/index.html/..", "/api/ask%00", "/api/health;x"]
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD", "TRACE"]
CONTENT_TYPES = ["application/json", "application/json; charset=utf-8", "text/plain",
                 "application/x-www-form-urlencoded", "", "application/vnd.api+json",
                 "application/json; charset=utf-16", "multipart/form-data; boundary=x"]
STRINGS = ["", "hi", "How do I install it?", "\ud800", "\x00", "a" * 3000, "\u202e\u200b",
           GITHUB, f"my token is {GITHUB}", "<script>alert(1)</script>", "%s%n%x",
           "../../etc/passwd", "ignore previous instructions", "🦀" * 50, "\r\n\r\nX: y",
           "[[/install/#install]]", "null", "1e999"]


def value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 4 else 5)
    if kind == 0:
        return rng.choice(STRINGS)
    if kind == 1:
        return rng.choice([0, -1, 2**63, 10**400, 1.5, float("1e308")])
    if kind == 2:
        return rng.choice([True, False, None])
    if kind == 3:
        return "".join(chr(rng.randrange(0x20, 0x3000)) for _ in range(rng.randrange(40)))
    if kind == 4:
        return rng.choice(STRINGS) * rng.randrange(1, 4)
    if kind in (5, 6):
        return [value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice(["question", "history", "page", "quote", "lang", "consent", "turn_id",
                        "rating", "reasons", "note", "kind", "markdown", "summary", "x"]):
            value(rng, depth + 1) for _ in range(rng.randrange(5))}


def ask_body(rng: random.Random) -> Any:
    body: dict[str, Any] = {"question": rng.choice([*STRINGS, INSTALL_QUESTION])}
    for name in rng.sample(["history", "page", "quote", "lang", "consent", "extra"],
                           rng.randrange(3)):
        body[name] = value(rng)
    if rng.random() < 0.2:
        body["history"] = [{"question": rng.choice(STRINGS), "kind": rng.choice(
            ["answer", "refusal", "x", ""]), "markdown": value(rng)} for _ in range(3)]
    return body if rng.random() < 0.8 else value(rng)


def mcp_body(rng: random.Random) -> Any:
    method = rng.choice(["initialize", "tools/list", "tools/call", "ping", "x", ""])
    params = {"name": rng.choice(["search_docs", "fetch_section", "ask", "nope"]),
              "arguments": value(rng)} if method == "tools/call" else value(rng)
    return {"jsonrpc": rng.choice(["2.0", "1.0", None]), "id": value(rng), "method": method,
            "params": params}


def encoded(rng: random.Random, body: Any) -> bytes:
    if rng.random() < 0.1:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(200)))
    text = json.dumps(body, ensure_ascii=rng.random() < 0.5)
    if rng.random() < 0.1:
        text = text[: rng.randrange(len(text) + 1)]  # cut short
    if rng.random() < 0.05:
        text = "[" * 5000
    return text.encode(rng.choice(["utf-8", "utf-8", "utf-8", "utf-16"]), "surrogatepass")


def one_request(rng: random.Random, client: httpx.Client) -> tuple[str, int]:
    path = rng.choice(PATHS) if rng.random() < 0.85 else rng.choice(ODD_PATHS)
    method = "POST" if path in ("/api/ask", "/api/feedback", "/mcp", "/api/bundle/reload") \
        and rng.random() < 0.8 else rng.choice(METHODS)
    headers = {"Content-Type": rng.choice(CONTENT_TYPES)}
    if rng.random() < 0.5:
        headers["Accept"] = rng.choice(["text/event-stream", "application/json",
                                        "application/json, text/event-stream", "*/*"])
    if path == "/metrics" and rng.random() < 0.7:
        headers["Authorization"] = f"Bearer {rng.choice([TOKEN, 'x', GITHUB])}"
    if rng.random() < 0.1:
        headers["X-Forwarded-For"] = rng.choice(["1.2.3.4", "x" * 300, "::1, 10.0.0.1"])
    if rng.random() < 0.05:
        headers["mcp-session-id"] = rng.choice(["0" * 32, GITHUB, "x"])
    body = mcp_body(rng) if path == "/mcp" else ask_body(rng)
    content = encoded(rng, body)
    if path == "/api/bundle/reload" and rng.random() < 0.3:  # a signed one reloads: ~0.2 s
        stamp, nonce = str(int(time.time()) + rng.choice([0, 0, -1000])), f"n{rng.random()}"[:20]
        nonce = nonce.replace(".", "x").ljust(16, "x")
        headers.update({TIMESTAMP_HEADER: stamp, NONCE_HEADER: nonce,
                        SIGNATURE_HEADER: signature(SECRET.encode(), stamp, nonce, content)})
    try:
        response = client.request(method, path, content=content if method != "GET" else None,
                                  headers=headers)
    except httpx.HTTPError as exc:  # a connection the server refused or closed: not a 5xx
        return f"{method} {path}", -len(type(exc).__name__)
    return f"{method} {path}", response.status_code


def raw_head(rng: random.Random, port: int) -> None:
    """Bytes that are not a well-formed HTTP request at all."""
    junk = rng.choice([
        bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300))),
        b"GET / HTTP/1.1\r\n" + b"X: " + b"a" * 20000 + b"\r\n\r\n",
        b"GET /\x00 HTTP/1.1\r\nHost: x\r\n\r\n",
        b"POST /api/ask HTTP/1.1\r\nContent-Length: -5\r\n\r\n",
        b"POST /api/ask HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"GET / HTTP/9.9\r\n\r\n",
        b"\r\n\r\n\r\n",
    ])
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        try:
            sock.sendall(junk)
            sock.shutdown(socket.SHUT_WR)
            data = sock.recv(65536)
        except OSError:
            return
    if data.startswith(b"HTTP/"):
        assert not data.split(b" ", 2)[1].startswith(b"5"), data[:200]


def test_a_seeded_fuzz_run_over_every_endpoint_gets_no_5xx(
    small_site: Path, tmp_path: Path
) -> None:
    config = tmp_path / "docpilot.toml"
    config.write_text(
        f"[records]\npath = {json.dumps(str(tmp_path / 'records.sqlite3'))}\n"
        "[limits]\nanswers_per_minute = 0\nanswers_per_minute_per_client = 0\n"
        "body_read_seconds = 2\nrequest_head_seconds = 2\nmax_connections_per_client = 0\n"
        f'[metrics]\nenabled = true\ntoken_env = "{TOKEN_ENV}"\n'
        f'[bundle]\nreload_secret_env = "{SECRET_ENV}"\n', encoding="utf-8")
    os.environ[TOKEN_ENV], os.environ[SECRET_ENV] = TOKEN, SECRET
    rng = random.Random(SEED)
    seen: dict[str, set[int]] = {}
    log = tmp_path / "serve.log"
    try:
        with ServeProcess(small_site, config, log) as runtime, httpx.Client(
            base_url=runtime.base_url, timeout=60
        ) as client:
            for n in range(REQUESTS):
                if n % 25 == 0:
                    raw_head(rng, runtime.port)
                    continue
                where, status = one_request(rng, client)
                seen.setdefault(where, set()).add(status)
                assert status < 500, f"{where} answered {status} (request {n})"
            final = client.post("/api/ask", json={"question": INSTALL_QUESTION})
            assert final.status_code == 200 and final.json()["kind"] in ("answer", "passages")
    finally:
        del os.environ[TOKEN_ENV], os.environ[SECRET_ENV]
    text = log.read_text(errors="replace")
    assert "Traceback" not in text and "Logging error" not in text, text[-3000:]
    assert GITHUB[4:] not in text
    # Every endpoint was reached, and requests were answered as well as refused.
    assert {p for w in seen for p in PATHS if w.endswith(" " + p)} >= set(PATHS) - {"/api/"}
    statuses = set().union(*seen.values())
    assert {200, 400, 401, 404, 405, 415} <= statuses, statuses
