"""A webhook receiver on a loopback port, as an owner would write one: it checks the
signature and the timestamp, remembers idempotency keys, and processes each event once.

Its behaviour is switchable while it runs, to play a receiver that is down (`503`), one
that processes an event but loses the reply (`500` after processing: the sender must
retry and the key must stop a second processing), or one too slow to answer (it holds
the reply until the sender has given up on it).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

Mode = Literal["ok", "down", "lose_first_reply", "stall"]
MAX_SKEW_SECONDS = 300
STALL_LIMIT_SECONDS = 30.0  # a stalled reply is released by then at the latest


def wait_until(condition: Any, seconds: float = 60.0) -> None:
    """Poll ``condition()`` until it holds, with a deadline (never a fixed sleep): for
    state the receiver does not see, such as the outbox rows in the database."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {seconds} s")
        time.sleep(0.02)


def verify(secret: bytes, headers: dict[str, str], body: bytes) -> bool:
    """The receiver's check: v1 HMAC-SHA256 of "<timestamp>.<body>", recent timestamp."""
    timestamp = headers.get("docpilot-timestamp", "")
    signature = headers.get("docpilot-signature", "")
    if not timestamp.isdigit() or abs(time.time() - int(timestamp)) > MAX_SKEW_SECONDS:
        return False
    expected = hmac.new(secret, timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(signature, f"v1={expected}")


@dataclass
class Delivery:
    key: str
    attempt: int
    event: dict[str, Any]


@dataclass
class WebhookReceiver:
    secret: bytes
    mode: Mode = "ok"
    deliveries: list[Delivery] = field(default_factory=list)
    processed: dict[str, dict[str, Any]] = field(default_factory=dict)  # key -> event
    process_count: Counter[str] = field(default_factory=Counter)
    bad_signatures: int = 0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._release = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                headers = {k.lower(): v for k, v in self.headers.items()}
                status = receiver.handle(headers, body)
                if status is None:  # stalled: the sender gave up; nobody reads a reply
                    self.close_connection = True
                    return
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                return None

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/hooks/docpilot"

    def handle(self, headers: dict[str, str], body: bytes) -> int | None:
        if not verify(self.secret, headers, body):
            with self._changed:
                self.bad_signatures += 1
            return 401
        event = json.loads(body)
        key = headers["docpilot-idempotency-key"]
        assert key == event["id"], "the header and the envelope name different keys"
        with self._changed:
            self.deliveries.append(Delivery(key, int(headers["docpilot-attempt"]), event))
            mode = self.mode
            self._changed.notify_all()
        if mode == "down":
            return 503
        if mode == "stall":
            self._release.wait(STALL_LIMIT_SECONDS)
            return None
        with self._changed:
            first = key not in self.processed
            if first:  # the deduplication an owner's receiver does
                self.processed[key] = event
                self.process_count[key] += 1
            self._changed.notify_all()
        if mode == "lose_first_reply" and first:
            return 500
        return 200

    def set_mode(self, mode: Mode) -> None:
        with self._changed:
            self.mode = mode

    def wait_for(self, predicate: Any, seconds: float = 60.0) -> None:
        """Block until ``predicate(self)`` holds (checked on every delivery), or fail."""
        deadline = time.monotonic() + seconds
        with self._changed:
            while not predicate(self):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"receiver: condition not met within {seconds} s "
                        f"({len(self.deliveries)} deliveries, {len(self.processed)} processed)"
                    )
                self._changed.wait(min(left, 0.5))

    def __enter__(self) -> WebhookReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._release.set()
        self._httpd.shutdown()
        self._thread.join()
        self._httpd.server_close()
