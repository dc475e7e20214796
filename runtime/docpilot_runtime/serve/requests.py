"""Reading a request and answering its errors: bounded JSON bodies, errors that name the
field and the limit, the app state a handler reads, and failures logged without text."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import traceback
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from docpilot_runtime.limits.caps import Caps, client_address
from docpilot_runtime.shared.types import (
    RequestError,
    decode_int,
)
from docpilot_runtime.turn import Runtime

log = logging.getLogger("docpilot.app")

# Deeper than any valid request (history items are objects in a list: depth 3).
MAX_JSON_DEPTH = 16
_JSON_NESTING = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')

GENERIC_FAILURE = "Something went wrong while answering; please try again."


def error_response(error: RequestError, status: int) -> JSONResponse:
    """A 4xx JSON error naming the field and, where one applies, the limit."""
    return JSONResponse(error.to_dict(), status_code=status)



class HTTPRequestError(RequestError):
    """A RequestError that also carries the HTTP status to answer with."""

    def __init__(self, status: int, field: str, message: str, limit: int | None = None) -> None:
        super().__init__(field, message, limit)
        self.status = status


class BodyTooLarge(Exception):
    """The request body passed the byte limit; reading stopped there."""


def is_json(request: Request) -> bool:
    """Whether the body is declared JSON (``application/json`` or a ``+json`` type) in
    UTF-8, the only charset JSON has between systems (RFC 8259), so a form post, a
    text/plain beacon or a UTF-16 body is refused with 415 before anything is read."""
    media, _, params = request.headers.get("content-type", "").partition(";")
    media = media.strip().lower()
    for param in params.split(";"):
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset" and value.strip().strip('"').lower() not in (
            "utf-8", "utf8"
        ):
            return False
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


async def read_capped(request: Request, limit: int) -> bytes:
    """The body, read chunk by chunk and abandoned as soon as it passes ``limit`` bytes,
    so an oversized upload never sits whole in memory."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def json_depth(raw: bytes) -> int:
    """How deep the brackets of a JSON text nest (strings skipped), in one linear pass,
    so a deeply nested body is refused before the decoder recurses into it."""
    depth = deepest = 0
    for match in _JSON_NESTING.finditer(raw):
        token = match.group()
        if token in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
        elif token in (b"]", b"}"):
            depth -= 1
    return deepest


async def read_json(request: Request, limit: int, seconds: float = 10.0) -> Any:
    """The decoded JSON body; raises RequestError (with the HTTP status to answer) for a
    wrong content type, an oversized, slow or too deeply nested body, or malformed JSON."""
    if not is_json(request):
        raise HTTPRequestError(
            415, "body", "must be sent as Content-Type: application/json, in UTF-8")
    try:
        # A client trickling its body would otherwise hold the connection forever.
        async with asyncio.timeout(seconds):
            raw = await read_capped(request, limit)
    except BodyTooLarge:
        raise HTTPRequestError(413, "body", "is over the size limit in bytes", limit) from None
    except TimeoutError:
        raise HTTPRequestError(
            408, "body", f"was not received within {seconds:g} seconds"
        ) from None
    if json_depth(raw) > MAX_JSON_DEPTH:
        raise HTTPRequestError(400, "body", "nests deeper than the limit", MAX_JSON_DEPTH)
    try:
        # Decoded here, strictly: json.loads would guess UTF-16 or UTF-32 from bytes, and
        # skip a byte-order mark, where RFC 8259 has UTF-8 only and no BOM.
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HTTPRequestError(
            400, "body", f"is not UTF-8 (at byte {exc.start})") from None
    if text.startswith("\ufeff"):
        raise HTTPRequestError(400, "body", "starts with a byte-order mark; send UTF-8 without one")
    if (nul := text.find("\x00")) != -1:  # JSON never holds a raw NUL: UTF-16 or UTF-32
        raise HTTPRequestError(400, "body", f"is not UTF-8 JSON (a NUL at character {nul})")
    try:
        return json.loads(text, parse_int=decode_int)
    except (json.JSONDecodeError, RecursionError) as exc:
        # The position only: the decoder's message never quotes the text itself.
        # (RecursionError: a few kilobytes of "[[[[" nest deeper than the stack.)
        where = getattr(exc, "pos", None)
        detail = f" (at character {where})" if where is not None else ""
        raise HTTPRequestError(400, "body", f"is not valid JSON{detail}") from None


def log_failure(exc: BaseException) -> None:
    """Where a turn failed, by exception type and code location only: an exception's
    message may carry the question (or a key pasted in it), so it is never logged."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "?"
    log.error("turn failed: %s at %s", type(exc).__name__, where)



def runtime_of(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


def caps_of(request: Request) -> Caps:
    caps: Caps = request.app.state.caps
    return caps


def client_of(request: Request) -> str:
    """The client address the caps count (X-Forwarded-For only from trusted proxies)."""
    peer = request.client.host if request.client else ""
    forwarded = request.headers.getlist("x-forwarded-for")
    return client_address(peer, forwarded, runtime_of(request).settings.caps.trusted_proxies)


