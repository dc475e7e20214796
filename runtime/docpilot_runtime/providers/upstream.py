"""What every client of a hosted model API shares: the key, its headers, timeouts,
Retry-After and scrubbing.

The model providers (``providers/``) and the OpenAI-compatible embedder call vendors with
a key read from the environment. The rules that keep that key and any password in a
``base_url`` out of messages, reprs and log lines live here, once: a change to them is a
security change and must reach every client at the same time.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit, urlunsplit

import httpx

SCRUBBED = "***"
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/@\s?#]*)@")


class MissingKey(Exception):
    """The variable api_key_env names is unset or empty; the message names the variable."""


def key_from_env(api_key_env: str) -> str:
    """The key held by the variable `api_key_env` names; "" when no variable is named.

    Raises MissingKey (naming the variable, never a value) when it is named but unset.
    """
    if not api_key_env:
        return ""
    key = os.environ.get(api_key_env, "")
    if not key:
        raise MissingKey(
            f"environment variable {api_key_env} (named by api_key_env) is not set or empty"
        )
    return key


def redact_userinfo(text: str) -> str:
    """`text` with the user:password part of every URL in it replaced by ***."""
    return _USERINFO.sub(lambda m: f"{m['scheme']}{SCRUBBED}@", text)


def split_userinfo(base_url: str) -> tuple[str, httpx.BasicAuth | None]:
    """`base_url` without its userinfo, and that userinfo as basic auth (None if none).

    httpx logs every request URL (INFO) and httpcore its connection targets (DEBUG);
    requests go to the bare URL, so neither, nor any message of ours, can print them.
    The password still reaches the server, as basic auth, which is what userinfo means.
    """
    parts = urlsplit(base_url)
    if "@" not in parts.netloc:
        return base_url, None
    userinfo, _, host = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    bare = urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    return bare, httpx.BasicAuth(unquote(user), unquote(password))


@dataclass(frozen=True)
class Scrubber:
    """Removes one key and any URL userinfo from text bound for a message or a log."""

    key: str = ""

    def __call__(self, text: str) -> str:
        if self.key:
            text = text.replace(self.key, SCRUBBED)
        return redact_userinfo(text)


def bearer_headers(key: str, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """`base` plus ``Authorization: Bearer`` when there is a key (none for keyless servers)."""
    headers = dict(base or {})
    if key:
        headers["authorization"] = f"Bearer {key}"
    return headers


def request_timeout(read: float, connect: float) -> httpx.Timeout:
    """httpx's timeout for one call: `connect` to open the connection, `read` per chunk."""
    return httpx.Timeout(read, connect=connect)


def retry_after_seconds(response: httpx.Response, default: float, cap: float = math.inf) -> float:
    """The server's Retry-After in seconds when it gives one as a number (at most `cap`),
    else `default`."""
    try:
        seconds = float(response.headers.get("retry-after", ""))
    except ValueError:
        return default
    if not math.isfinite(seconds) or seconds < 0:
        return default
    return min(seconds, cap)


def upstream_error_message(response: httpx.Response) -> str:
    """The error message in a vendor's JSON error body, else the body's text."""
    try:
        body = response.json()
    except ValueError:
        return response.text.strip() or "(empty body)"
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    if isinstance(error, str):
        return error
    return response.text.strip()
