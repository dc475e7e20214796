"""A static host on loopback, as a published site is served: files from memory, with an
ETag (sha256 of the bytes) and 304 for a matching If-None-Match. The test publishes new
bytes under a path while the runtime runs, and reads what was asked (`requests`).

    with StaticHost() as host:
        host.publish("docpilot/bundle.msgpack", data)
        url = host.url("docpilot/bundle.msgpack")
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any


class StaticHost:
    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.requests: list[tuple[str, int]] = []  # (path, status), in order
        self._lock = threading.Lock()
        self._changed = threading.Condition()
        host = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0].lstrip("/")
                with host._lock:
                    body = host.files.get(path)
                if body is None:
                    self._send(404, b"not found", path)
                    return
                etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
                if self.headers.get("If-None-Match") == etag:
                    self._send(304, b"", path, etag)
                    return
                self._send(200, body, path, etag)

            def _send(self, status: int, body: bytes, path: str, etag: str = "") -> None:
                with host._lock:
                    host.requests.append((path, status))
                with host._changed:
                    host._changed.notify_all()
                self.send_response(status)
                if etag:
                    self.send_header("ETag", etag)
                if status != 304:
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if status != 304:
                    self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def url(self, path: str = "") -> str:
        port = self._httpd.server_address[1]
        return f"http://127.0.0.1:{port}/{path}"

    def publish(self, path: str, body: bytes) -> None:
        with self._lock:
            self.files[path] = body

    def publish_site(self, site: Path) -> None:
        """Every file of a built site under ``site``, by its path."""
        for file in site.rglob("*"):
            if file.is_file():
                self.publish(file.relative_to(site).as_posix(), file.read_bytes())

    def wait_for(self, condition: Callable[[], bool], timeout: float) -> bool:
        """Block until ``condition()`` holds (re-checked after every request served), or
        ``timeout`` passes; whether it held."""
        with self._changed:
            return self._changed.wait_for(condition, timeout)

    def statuses(self, path: str) -> list[int]:
        with self._lock:
            return [status for asked, status in self.requests if asked == path]

    def __enter__(self) -> StaticHost:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(10)
