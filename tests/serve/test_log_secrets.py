"""No secret in any log line (issue 27, finding 3): a real `docpilot serve` process, its log
as it writes it (uvicorn's own logging configuration: access lines on stdout, the rest on
stderr), and one session that sends secrets of twelve kinds in every place a client can
put one: the URL path (plain, percent-encoded, raw UTF-8 with look-alike letters), the
query string, headers, and every field of `/api/ask`, `/api/feedback` and an MCP call.
Every line the process wrote is then searched for every secret, as sent and as encoded;
and redaction never breaks a line (no "Logging error", no traceback)."""

from __future__ import annotations

import json
import random
import socket
import string
from pathlib import Path
from urllib.parse import quote

import httpx
from servers.processes import ServeProcess
from small_site import INSTALL_QUESTION

_rng = random.Random(3131)
ALNUM = string.ascii_letters + string.digits


def rand(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


# Twelve kinds, as a client would send them: (the value, its random part that must not leak).
def _secrets() -> dict[str, tuple[str, str]]:
    body = {
        "github": ("ghp_", rand(ALNUM, 36)),
        "stripe": ("sk_live_51", rand(ALNUM, 97)),
        "openai": ("sk-proj-", rand(ALNUM, 48)),
        "slack": (f"xoxb-{rand(string.digits, 12)}-{rand(string.digits, 13)}-", rand(ALNUM, 24)),
        "aws_id": ("AKIA", rand("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)),
        "gitlab": ("glpat-", rand(ALNUM, 20)),
        "google": ("AIza", rand(ALNUM, 35)),
        "npm": ("npm_", rand(ALNUM, 36)),
        "huggingface": ("hf_", rand(string.ascii_letters, 34)),
        "sendgrid": (f"SG.{rand(ALNUM, 22)}.", rand(ALNUM, 43)),
        "anthropic": ("sk-ant-api03-", rand(ALNUM, 93) + "AA"),
        "digitalocean": ("dop_v1_", rand("0123456789abcdef", 64)),
    }
    return {kind: (prefix + rest, rest[-16:]) for kind, (prefix, rest) in body.items()}


SECRETS = _secrets()
PASSWORD = "Wq3!" + rand(ALNUM, 12)


def raw_request(port: int, head: bytes, body: bytes = b"") -> int:
    """Send a request exactly as given (a path no HTTP client would encode this way)."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(head + body)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/") else 0


def send_everywhere(runtime: ServeProcess, value: str) -> None:
    base, port = runtime.base_url, runtime.port
    look_alike = value.replace("p", "\u0440", 1)  # a Cyrillic "р", sent as raw UTF-8
    for path in (f"/{value}", f"/docs/{value}/", f"/api/ask/{value}", f"/api/{value}",
                 f"/docs/{quote(value, safe='')}", "/docs/" + value.replace("_", "%5F")):
        raw_request(port, f"GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n".encode())
    raw_request(port, b"GET /docs/" + look_alike.encode() + b" HTTP/1.1\r\nHost: t\r\n"
                b"Connection: close\r\n\r\n")
    raw_request(port, f"POST /api/ask/{value} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n"
                "Content-Length: 0\r\n\r\n".encode())
    with httpx.Client(base_url=base, timeout=60) as client:
        client.get("/api/health", params={"token": value, "q": f"key {value}"},
                   headers={"Authorization": f"Bearer {value}", "X-Api-Key": value,
                            "Cookie": f"session={value}", "Referer": f"https://x.test/{value}"})
        history = [{"question": f"my key is {value}", "kind": "answer",
                    "markdown": f"Use {value} here", "summary": value, "quote": value}]
        for body in ({"question": f"my token is {value}"},
                     {"question": INSTALL_QUESTION, "quote": f"token: {value}"},
                     {"question": INSTALL_QUESTION, "page": f"/docs/{value}/"},
                     {"question": INSTALL_QUESTION, "history": history},
                     {"question": f"my key is OPENAI_API_KEY = {value}"}):
            client.post("/api/ask", json=body)
        answered = client.post("/api/ask", json={"question": INSTALL_QUESTION}).json()
        client.post("/api/feedback", json={"turn_id": answered["turn_id"], "rating": "down",
                                           "note": f"the key {value} did not work"})
        client.post("/api/ask", content=b'{"question": "' + value.encode() + b'"',
                    headers={"Content-Type": "application/json"})  # malformed JSON
        client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                  "params": {"name": "search_docs",
                                             "arguments": {"query": value}}},
                    headers={"Accept": "application/json, text/event-stream"})


def leaked(line: str, fragment: str) -> bool:
    forms = {fragment, quote(fragment, safe=""), fragment.encode().decode("latin-1")}
    return any(form in line for form in forms)


def test_no_log_line_of_a_session_full_of_secrets_carries_one(
    small_site: Path, tmp_path: Path
) -> None:
    config = tmp_path / "docpilot.toml"
    config.write_text("[records]\nenabled = false\n"
                      "[limits]\nanswers_per_minute = 0\nanswers_per_minute_per_client = 0\n",
                      encoding="utf-8")
    log = tmp_path / "serve.log"
    with ServeProcess(small_site, config, log) as runtime:
        for value, _ in SECRETS.values():
            send_everywhere(runtime, value)
        send_everywhere(runtime, f"password={PASSWORD}")
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    assert any('"GET /api/health' in line for line in lines), "the access log was written"
    assert sum("[redacted" in line for line in lines) >= len(SECRETS), "redaction ran"
    for kind, (_, fragment) in SECRETS.items():
        found = [line for line in lines if leaked(line, fragment)]
        assert not found, f"{kind} in the log: {found[:3]}"
    assert not [line for line in lines if leaked(line, PASSWORD[4:])]
    assert not [line for line in lines if "Logging error" in line or "Traceback" in line]


def test_redaction_never_raises_and_keeps_an_access_line_formattable() -> None:
    import logging

    from docpilot_runtime.serve.server import RedactCredentials
    from uvicorn.logging import AccessFormatter

    value, fragment = SECRETS["github"]
    record = logging.LogRecord("uvicorn.access", logging.INFO, __file__, 1,
                               '%s - "%s %s HTTP/%s" %d', ("127.0.0.1:5000", "GET",
                                                           f"/docs/{value}", "1.1", 404), None)
    assert RedactCredentials().filter(record)
    line = AccessFormatter('%(client_addr)s - "%(request_line)s" %(status_code)s').format(record)
    assert fragment not in line and "[redacted" in line and "404" in line
    # A record whose arguments do not fit its message is passed on, never raised from.
    broken = logging.LogRecord("docpilot.test", logging.INFO, __file__, 1, "%s %s",
                               (value,), None)
    assert RedactCredentials().filter(broken)
    assert fragment not in str(broken.msg) + json.dumps(str(broken.args))
