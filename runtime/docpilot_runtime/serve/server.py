"""How `docpilot serve` runs uvicorn: connection limits and log lines that keep secrets out.

- uvicorn's h11 protocol with the bounds of `connections` (`[limits] max_connections`,
  `max_connections_per_client`, `request_head_seconds`): a request head has a deadline,
  one client a share of the connections, the server a ceiling, and past the limit the
  site, health and metrics are still served while the API answers 503;
- small h11 buffers: a request head over 16 KiB is refused, and idle keep-alive
  connections close after `request_head_seconds` (request bodies have their own
  deadline in the app, `body_read_seconds`);
- the log lines of `logs`: the access log without query strings, and every line of the
  process through the credential check (``[redacted KIND]``), which never breaks a line.
"""

from __future__ import annotations

import functools
import gc
from typing import Any

import uvicorn

from docpilot_runtime.serve.connections import ConnectionLimits, GuardedH11Protocol
from docpilot_runtime.serve.logs import (
    AccessLogWithoutQuery,
    RedactCredentials,
    guard_logs,
    redact,
)
from docpilot_runtime.settings.load import Settings

MAX_HEAD_BYTES = 16_384


def freeze_loaded() -> None:
    """Move everything loaded so far (bundles, indexes, the web stack) out of the cyclic
    garbage collector's reach. A long answer's validation makes many short-lived objects,
    and each full collection they trigger walks the whole heap holding the GIL: with the
    loaded runtime frozen, such a pause stalled `/api/health` about 22 ms instead of
    115 ms (`benchmarks/bench_validate.py`). Refcounting still frees what is dropped."""
    gc.collect()
    gc.freeze()


def uvicorn_config(
    app: Any, settings: Settings, host: str, port: int, **extra: Any
) -> uvicorn.Config:
    """The uvicorn configuration of `docpilot serve` (tests pass ``extra`` such as
    ``log_config=None``). Call `guard_logs` once it is built."""
    options: dict[str, Any] = {
        "host": host,
        "port": port,
        "log_level": "info",
        # uvicorn would believe X-Forwarded-For from 127.0.0.1 on its own; the app
        # decides, from `[limits] trusted_proxies` (see caps.client_address).
        "proxy_headers": False,
        # The connection bounds; uvicorn's own limit_concurrency stays off (it would
        # refuse health and the site too, and count idle connections forever).
        "http": functools.partial(GuardedH11Protocol, limits=ConnectionLimits.of(settings.caps)),
        "h11_max_incomplete_event_size": MAX_HEAD_BYTES,
        # One rule for a connection waiting for its next request: `request_head_seconds`
        # (the head deadline of `connections` applies to it as well).
        "timeout_keep_alive": settings.caps.request_head_seconds,
        "server_header": False,
        **extra,
    }
    return uvicorn.Config(app, **options)


__all__ = [
    "AccessLogWithoutQuery",
    "RedactCredentials",
    "freeze_loaded",
    "guard_logs",
    "redact",
    "uvicorn_config",
]
