"""Log lines that keep secrets out: every line `docpilot serve` writes passes the credential
check that questions pass, and redacting never breaks a line.

A client chooses what goes into some log lines: the request path of every access line
(`/docs/ghp_…`, percent-encoded or as raw UTF-8), a provider's error, a URL. So:

- the access log drops the query string (`AccessLogWithoutQuery`: a query can carry a
  token or a question);
- `RedactCredentials`, on every handler, replaces each credential the detector finds
  with ``[redacted KIND]``: in each argument of a record (the access line's path read as
  the client's bytes and percent-decoded), in the formatted message, and in a
  traceback's text. Arguments keep their shape, since uvicorn's access formatter unpacks
  them; whatever goes wrong inside the filter, the line is passed on withheld, never
  raised from.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import unquote

from docpilot_runtime.screen.credentials import find_credential

MAX_REDACTIONS = 20  # per text: a bound on the work a hostile line can cause
ACCESS_LOGGER = "uvicorn.access"
ACCESS_PATH_ARG = 2  # uvicorn's access record args: client, method, path, version, status
WITHHELD = "[withheld: this log line could not be checked for credentials]"


def redact(text: str) -> str:
    """``text`` with each credential the detector finds replaced by its kind."""
    for _ in range(MAX_REDACTIONS):
        match = find_credential(text)
        if match is None:
            break
        text = f"{text[: match.start]}[redacted {match.kind}]{text[match.end :]}"
    return text


def one_line(text: str) -> str:
    """Control characters escaped, so decoded text cannot start a forged log line."""
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


def redact_text(text: str) -> str:
    """``text`` redacted; when it holds percent-encoding, its decoded form is checked too
    (and shown decoded, on one line, if that is where a credential was)."""
    cleaned = redact(text)
    if cleaned == text and "%" in text:
        decoded = unquote(text)
        redacted = redact(decoded)
        if redacted != decoded:
            return one_line(redacted)
    return cleaned


def redact_path(path: str) -> str:
    """An access line's path (uvicorn decodes the raw bytes as latin-1) read as the client
    wrote it: UTF-8, percent-decoded; redacted, on one line, when it holds a credential."""
    try:
        text = path.encode("latin-1").decode("utf-8")
    except UnicodeError:
        text = path
    decoded = unquote(text)
    if find_credential(decoded) is not None:
        return one_line(redact(decoded))
    return redact_text(path)


class RedactCredentials(logging.Filter):
    """A handler filter: credentials in a record's arguments, message and traceback are
    replaced by their kind; the record keeps its shape and the filter never raises."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            self._redact(record)
        except Exception:  # a line that cannot be checked is not written as it was
            record.msg = WITHHELD
            record.args = _withheld_args(record)
            record.exc_info, record.exc_text, record.stack_info = None, None, None
        return True

    def _redact(self, record: logging.LogRecord) -> None:
        access = record.name == ACCESS_LOGGER
        if isinstance(record.args, tuple):
            record.args = tuple(
                (redact_path(a) if access and i == ACCESS_PATH_ARG else redact_text(a))
                if isinstance(a, str) else a
                for i, a in enumerate(record.args)
            )
        message = record.getMessage()
        cleaned = redact_text(message)
        if cleaned != message:  # in the format string itself, or across arguments
            if access:
                record.args = _withheld_args(record)
            else:
                record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_text(record.exc_text)
        if record.stack_info:
            record.stack_info = redact_text(record.stack_info)


def _withheld_args(record: logging.LogRecord) -> Any:
    """The record's arguments with every string withheld, in their shape (an access line's
    formatter unpacks five of them)."""
    if isinstance(record.args, tuple):
        return tuple("[withheld]" if isinstance(a, str) else a for a in record.args)
    return None


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
    access = logging.getLogger(ACCESS_LOGGER)
    if not any(isinstance(f, AccessLogWithoutQuery) for f in access.filters):
        access.addFilter(AccessLogWithoutQuery())
    names = ("", "uvicorn", "uvicorn.error", ACCESS_LOGGER, "docpilot")
    handlers = {h for name in names for h in logging.getLogger(name).handlers}
    if logging.lastResort is not None:  # where records go when no handler is configured
        handlers.add(logging.lastResort)
    for handler in handlers:
        if not any(isinstance(f, RedactCredentials) for f in handler.filters):
            handler.addFilter(RedactCredentials())


__all__ = [
    "AccessLogWithoutQuery",
    "RedactCredentials",
    "guard_logs",
    "redact",
    "redact_path",
    "redact_text",
]
