"""How `docpilot serve` runs uvicorn: connection limits and log lines that keep secrets out.

- uvicorn's h11 protocol with the bounds of `connections` (`[limits] max_connections`,
  `max_connections_per_client`, `request_head_seconds`): a request head has a deadline,
  one client a share of the connections, the server a ceiling, and past the limit the
  site, health and metrics are still served while the API answers 503;
- small h11 buffers: a request head over 16 KiB is refused, and idle keep-alive
  connections close after `request_head_seconds` (request bodies have their own
  deadline in the app, `body_read_seconds`);
- the access log records the path without its query string (a query can carry a
  token or a question), and every log line of the process passes a filter that
  replaces a credential-shaped value with ``[redacted KIND]``.
"""

from __future__ import annotations

import functools
import gc
import logging
from typing import Any
from urllib.parse import unquote

import uvicorn

from docpilot_runtime.screen.credentials import find_credential
from docpilot_runtime.serve.connections import ConnectionLimits, GuardedH11Protocol
from docpilot_runtime.settings.load import Settings

MAX_HEAD_BYTES = 16_384
MAX_REDACTIONS = 20  # per line: a bound on the work a hostile line can cause
ACCESS_PATH_ARG = 2  # uvicorn's access record args: client, method, path, version, status


def redact(text: str) -> str:
    """``text`` with each credential the detector finds replaced by its kind."""
    for _ in range(MAX_REDACTIONS):
        match = find_credential(text)
        if match is None:
            break
        text = f"{text[: match.start]}[redacted {match.kind}]{text[match.end :]}"
    return text


class RedactCredentials(logging.Filter):
    """A handler filter: the formatted message, redacted, replaces the record's own."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned == message and "%" in message:
            # The access log percent-encodes paths (`key%3Dvalue`): look at the decoded
            # text too, and keep it on one line if it has to be shown decoded.
            decoded = unquote(message)
            redacted = redact(decoded)
            if redacted != decoded:
                cleaned = redacted.replace("\r", "\\r").replace("\n", "\\n")
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


class AccessLogWithoutQuery(logging.Filter):
    """A filter on ``uvicorn.access``: its path argument loses ``?...``."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) > ACCESS_PATH_ARG:
            path = args[ACCESS_PATH_ARG]
            if isinstance(path, str) and "?" in path:
                trimmed = path.split("?", 1)[0]
                record.args = (*args[:ACCESS_PATH_ARG], trimmed, *args[ACCESS_PATH_ARG + 1 :])
        return True


def guard_logs() -> None:
    """Install both filters on the loggers and handlers uvicorn configured (call after
    `uvicorn.Config` is built: it configures logging in its constructor)."""
    access = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, AccessLogWithoutQuery) for f in access.filters):
        access.addFilter(AccessLogWithoutQuery())
    names = ("", "uvicorn", "uvicorn.error", "uvicorn.access", "docpilot")
    handlers = {h for name in names for h in logging.getLogger(name).handlers}
    if logging.lastResort is not None:  # where records go when no handler is configured
        handlers.add(logging.lastResort)
    for handler in handlers:
        if not any(isinstance(f, RedactCredentials) for f in handler.filters):
            handler.addFilter(RedactCredentials())


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
