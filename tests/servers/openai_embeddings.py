"""A local server speaking OpenAI's ``POST /v1/embeddings`` wire protocol, scripted per test.

It answers like the real API (``{"object": "list", "data": [{"object": "embedding",
"index": i, "embedding": [...]}], "model": ..., "usage": ...}``), records every request so a
test can count calls and read batch sizes and headers, and can be told to misbehave: return
a wrong width for one input, fail with 500 for the next n requests, demand a key, or answer
``data`` out of order as the API is allowed to.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

DEFAULT_DIMS = 1536  # text-embedding-3-small's width when "dimensions" is not sent


def fake_embedding(text: str, dims: int) -> list[float]:
    """A deterministic, deliberately non-unit vector for `text`, so tests can check order
    and that the client normalises."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    vector = np.random.default_rng(seed).standard_normal(dims) * 3.0
    return [float(x) for x in vector]


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class Script:
    """How the server misbehaves; tests set fields before (or between) calls."""

    fail_next: int = 0  # answer this many upcoming requests with fail_status
    fail_status: int = 500
    retry_after: str | None = None  # Retry-After header sent with a failure
    wrong_width: dict[str, int] = field(default_factory=dict)  # input text -> width to return
    api_key: str | None = None  # when set, any other bearer token gets 401
    reverse_order: bool = False  # list data[] backwards (clients must sort by index)


class OpenAIEmbeddingsServer:
    """Run with ``with OpenAIEmbeddingsServer() as server:``; point clients at base_url."""

    def __init__(self) -> None:
        self.script = Script()
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def __enter__(self) -> OpenAIEmbeddingsServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop serving and close the listening socket (a later request is refused)."""
        if self._thread.is_alive():
            self._httpd.shutdown()
            self._thread.join()
        self._httpd.server_close()

    def batch_sizes(self) -> list[int]:
        return [len(r.body.get("input", [])) for r in self.requests]

    def _respond(self, request: RecordedRequest) -> tuple[int, dict[str, str], dict[str, Any]]:
        """Decide the answer to one request, under the lock so scripts count exactly."""
        with self._lock:
            self.requests.append(request)
            script = self.script
            if script.api_key is not None:
                sent = request.headers.get("authorization", "")
                if sent != f"Bearer {script.api_key}":
                    # The real API echoes (a masked form of) the key; echo it whole, so a
                    # test can prove the client never repeats it.
                    message = f"Incorrect API key provided: {sent.removeprefix('Bearer ')}"
                    return 401, {}, {"error": {"message": message, "type": "invalid_request"}}
            if script.fail_next > 0:
                script.fail_next -= 1
                headers = {"Retry-After": script.retry_after} if script.retry_after else {}
                error = {"message": "The server had an error", "type": "server_error"}
                return script.fail_status, headers, {"error": error}
        if request.path != "/v1/embeddings":
            return 404, {}, {"error": {"message": f"Unknown path {request.path}"}}
        inputs = request.body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list) or not inputs or "" in inputs:
            message = "'$.input' is invalid: expected a non-empty list of non-empty strings"
            return 400, {}, {"error": {"message": message, "type": "invalid_request_error"}}
        dims = int(request.body.get("dimensions") or DEFAULT_DIMS)
        data = [
            {
                "object": "embedding",
                "index": index,
                "embedding": fake_embedding(text, script.wrong_width.get(text, dims)),
            }
            for index, text in enumerate(inputs)
        ]
        if script.reverse_order:
            data.reverse()
        tokens = sum(len(text.split()) for text in inputs)
        body = {
            "object": "list",
            "data": data,
            "model": request.body.get("model"),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
        return 200, {}, body

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw) if raw else {}
                except json.JSONDecodeError:
                    body = {"_unparsed": raw.decode(errors="replace")}
                headers = {k.lower(): v for k, v in self.headers.items()}
                status, extra, answer = server._respond(RecordedRequest(self.path, headers, body))
                payload = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in extra.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output quiet; requests are recorded instead

        return Handler


def closed_port_url() -> str:
    """A base_url on 127.0.0.1 where nothing listens: the endpoint is down."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"
