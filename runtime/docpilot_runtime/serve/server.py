"""How `docpilot serve` runs uvicorn: connection limits and log lines that keep secrets out.

- ``limit_concurrency`` (`[limits] max_connections`): past it uvicorn answers 503
  instead of accepting every connection a flood opens;
- small h11 buffers: a request head over 16 KiB is refused, and idle keep-alive
  connections close after 5 s (request bodies have their own deadline in the app);
- the access log records the path without its query string (a query can carry a
  token or a question), and every log line of the process passes a filter that
  replaces a credential-shaped value with ``[redacted KIND]``.
"""

from __future__ import annotations

import gc
import logging
from typing import Any
from urllib.parse import unquote

import uvicorn

from docpilot_runtime.screen.credentials import find_credential
from docpilot_runtime.settings.load import Settings

MAX_HEAD_BYTES = 16_384
KEEP_ALIVE_SECONDS = 5
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
        "limit_concurrency": settings.caps.max_connections,
        "h11_max_incomplete_event_size": MAX_HEAD_BYTES,
        "timeout_keep_alive": KEEP_ALIVE_SECONDS,
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
