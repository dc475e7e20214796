"""A site tool's backend on a loopback port: what a site's declared tool endpoint is.

`site_tool_backend(reply)` serves POSTs until the block ends, recording every JSON body
it was sent; ``reply(body)`` gives the status, content type and bytes to answer with.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = Callable[[dict[str, Any]], tuple[int, str, bytes]]
# The one tool the tests declare: {"plan": <string>}, nothing else.
PLAN_SCHEMA = {
    "type": "object",
    "properties": {"plan": {"type": "string"}},
    "required": ["plan"],
    "additionalProperties": False,
}


@contextmanager
def site_tool_backend(reply: Reply) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Yields the endpoint URL and the list of bodies received (cleared by the caller)."""
    calls: list[dict[str, Any]] = []

    class Backend(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            calls.append(body)
            status, content_type, data = reply(body)
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    backend = ThreadingHTTPServer(("127.0.0.1", 0), Backend)
    thread = threading.Thread(target=backend.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{backend.server_address[1]}/limits", calls
    finally:
        backend.shutdown()
        backend.server_close()
        thread.join()
