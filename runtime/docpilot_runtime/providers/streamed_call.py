"""The one streamed POST both vendors share: headers, timeouts, retries, error wording.

A provider turns a stable system prefix, a growing message list and tool specs into one
streamed model call and returns a ModelReply; failures come back as ProviderError.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from docpilot_runtime.providers.messages import CallOptions, Message, ModelReply, ToolSpec, Usage
from docpilot_runtime.providers.protocol import DeltaSink, ErrorKind, ProviderError
from docpilot_runtime.providers.sse import StreamDeadlines, StreamStalled
from docpilot_runtime.providers.upstream import (
    MissingKey,
    Scrubber,
    key_from_env,
    request_timeout,
    retry_after_seconds,
    split_userinfo,
    upstream_error_message,
)
from docpilot_runtime.settings.providers import ProviderSettings

# A reader is waiting for the answer, so retries are few and short: a server asking for a
# longer pause than MAX_RETRY_WAIT_SECONDS gets none, and the ladder moves on instead.
RETRY_BACKOFF_SECONDS = 0.25
MAX_RETRY_WAIT_SECONDS = 2.0
ERROR_DETAIL_CHARS = 300  # of an upstream error message quoted in ours

# Closes still running after their caller was cancelled again (held so they finish).
_CLOSING: set[asyncio.Task[None]] = set()


async def close_even_if_cancelled(response: httpx.Response) -> None:
    """Close a streamed response so its connection leaves the pool, even under repeated
    cancellation.

    httpcore shields its close from anyio cancellation, not from a second asyncio
    ``Task.cancel()``; a turn cancelled twice (the reader left, then the server shut the
    response down) used to leave the connection ACTIVE in the pool for ever, and ~100 of
    those filled it. The close runs as its own task, which a cancel of ours cannot stop.
    """
    closing = asyncio.ensure_future(response.aclose())
    _CLOSING.add(closing)
    closing.add_done_callback(_CLOSING.discard)
    await asyncio.shield(closing)


@dataclass
class StreamProgress:
    """What one try has streamed so far: whether the answer began, and the usage seen."""

    on_delta: DeltaSink | None
    started: bool = False
    usage: Usage = field(default_factory=Usage)
    deadlines: StreamDeadlines | None = None  # set when the request is sent

    async def emit(self, kind: str, text: str) -> None:
        if not text:
            return
        self.started = True
        if self.on_delta is not None:
            await self.on_delta(kind, text)


class HTTPProvider:
    """The streamed POST both vendors share: headers, timeouts, retries, error wording.

    Subclasses say how to build the request body and how to read their stream. `client` is
    the seam for callers that manage their own pool; without one the provider owns a
    client and ``aclose()`` releases it.
    """

    kind: str  # set by each subclass

    def __init__(self, settings: ProviderSettings, client: httpx.AsyncClient | None = None):
        if settings.kind != self.kind:
            raise ValueError(
                f"{type(self).__name__} takes kind {self.kind!r}, got {settings.kind!r}"
            )
        self.settings = settings
        self.model = settings.model
        self.name = settings.name
        # Userinfo in base_url becomes basic auth, so the URL that httpx logs carries none.
        base_url, self._auth = split_userinfo(settings.base_url)
        self._base_url = base_url.rstrip("/")
        try:
            key = key_from_env(settings.api_key_env)
        except MissingKey as exc:
            raise ProviderError(
                f"provider {self.name}: {exc}", kind="config", provider=self.name
            ) from None
        self._scrub = Scrubber(key)
        self._headers = {"accept": "text/event-stream", **self.request_headers(key)}
        if "authorization" in self._headers:
            self._auth = None  # a bearer key and basic auth share one header: the key wins
        self._timeout = request_timeout(settings.timeout, settings.connect_timeout)
        self._owns_client = client is None
        self._client = client if client is not None else httpx.AsyncClient(timeout=self._timeout)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} at {self._base_url}>"

    @property
    def url(self) -> str:
        raise NotImplementedError

    def request_headers(self, key: str) -> dict[str, str]:
        raise NotImplementedError

    def request_body(
        self,
        system: Sequence[str],
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        max_tokens: int,
        options: CallOptions,
    ) -> dict[str, Any]:
        raise NotImplementedError

    async def read_stream(self, response: httpx.Response, progress: StreamProgress) -> ModelReply:
        raise NotImplementedError

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    async def complete(
        self,
        system: Sequence[str],
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        on_delta: DeltaSink | None = None,
        max_tokens: int | None = None,
        options: CallOptions | None = None,
    ) -> ModelReply:
        """Stream one reply, retrying only failures that happen before the answer begins."""
        body = self.request_body(
            system, messages, tools, max_tokens or self.settings.max_tokens,
            options or CallOptions(),
        )
        tries = 1 + self.settings.retries
        for attempt in range(1, tries + 1):
            progress = StreamProgress(on_delta)
            outcome = await self._try_once(body, progress, attempt)
            if isinstance(outcome, ModelReply):
                return outcome
            failure = outcome.error
            failure.usage = progress.usage
            # A timeout is not retried: it has already cost the reader `timeout` seconds,
            # and the next provider on the ladder is a better bet than the same one again.
            retry = (
                attempt < tries
                and failure.retryable
                and failure.kind != "timeout"
                and not progress.started
                and outcome.wait <= MAX_RETRY_WAIT_SECONDS
            )
            if not retry:
                # Raised here, outside any except block, so the error carries no httpx
                # exception (whose request holds the key header) as its context.
                raise failure
            await asyncio.sleep(outcome.wait)
        raise AssertionError("unreachable: the last try returns or raises")

    async def _try_once(
        self, body: dict[str, Any], progress: StreamProgress, attempt: int
    ) -> ModelReply | FailedTry:
        """One POST: the reply, or the failure and how long to wait before another try."""
        backoff = RETRY_BACKOFF_SECONDS * attempt
        progress.deadlines = StreamDeadlines(
            self.settings.first_token_timeout,
            self.settings.idle_timeout,
            asyncio.get_running_loop().time(),
        )
        request = self._client.build_request(
            "POST", self.url, json=body, headers=self._headers, timeout=self._timeout
        )
        try:
            response = await self._client.send(
                request, stream=True, auth=self._auth or httpx.USE_CLIENT_DEFAULT
            )
            try:
                if response.status_code == 200:
                    return await self.read_stream(response, progress)
                await response.aread()
                return self._status_failure(response, backoff)
            finally:
                await close_even_if_cancelled(response)
        except StreamStalled as exc:
            error = self._failure(
                f"{exc} (keep-alive comments and pings do not count)",
                kind="timeout",
                retryable=False,
            )
            return FailedTry(error, 0.0)
        except httpx.TimeoutException as exc:
            if isinstance(exc, httpx.ConnectTimeout):
                what = f"connecting timed out after {self.settings.connect_timeout:g}s"
                setting = "connect_timeout"
            else:
                what = f"no data for {self.settings.timeout:g}s"
                setting = "timeout"
            error = self._failure(
                f"{what} ({type(exc).__name__}; setting {setting})",
                kind="timeout",
                retryable=True,
            )
            return FailedTry(error, 0.0)
        except httpx.TransportError as exc:
            detail = self._scrub(str(exc)) or "no detail"
            error = self._failure(
                f"connection to {self._base_url} (base_url) failed: {type(exc).__name__}: {detail}",
                kind="connection",
                retryable=True,
            )
            return FailedTry(error, backoff)
        except ProviderError as exc:
            return FailedTry(exc, backoff)

    def _status_failure(self, response: httpx.Response, backoff: float) -> FailedTry:
        """Explain a non-200 answer, and how long to wait before a retry may help."""
        status = response.status_code
        retryable = status in (408, 409, 429) or status >= 500
        head = f"{self.url} answered HTTP {status}"
        overflow = False
        if status in (401, 403):
            if self.settings.api_key_env:
                detail = f"it rejected the key from {self.settings.api_key_env} (api_key_env)"
            else:
                detail = "it wants a key; set api_key_env to the variable holding one"
        elif status == 404:
            detail = f"check base_url and model {self.model!r}"
        else:
            detail = self._scrub(upstream_error_message(response))[:ERROR_DETAIL_CHARS]
            overflow = status == 400 and context_overflow(response, detail)
            if overflow:
                detail += " (the prompt does not fit the model's context)"
            elif "--jinja" in detail:
                # llama.cpp's server started without its chat templates refuses tools, and
                # will again: no retry, and say what would help.
                retryable = False
                detail += (
                    " (start llama-server with --jinja, or set profile = \"compact\", "
                    "which sends no tools)"
                )
        error = self._failure(
            f"{head}: {detail}", kind="status", status=status, retryable=retryable
        )
        error.context_overflow = overflow
        return FailedTry(error, retry_after_seconds(response, backoff))

    def _failure(
        self, what: str, *, kind: ErrorKind, status: int | None = None, retryable: bool = False
    ) -> ProviderError:
        return ProviderError(
            f"provider {self.name}: {what}",
            kind=kind,
            provider=self.name,
            status=status,
            retryable=retryable,
        )

    def malformed(self, what: str) -> ProviderError:
        """A stream that does not follow the vendor's protocol; the ladder moves on."""
        return self._failure(f"malformed stream from {self.url}: {what}", kind="malformed")

    def stream_error(self, error_type: str, message: str, retryable: bool) -> ProviderError:
        return self._failure(
            f"{self.url} reported {error_type or 'an error'} mid-stream: "
            f"{self._scrub(message)[:ERROR_DETAIL_CHARS]}",
            kind="stream_error",
            retryable=retryable,
        )


_OVERFLOW_PHRASES = ("too long", "too many tokens", "maximum context", "exceed")


def context_overflow(response: httpx.Response, detail: str) -> bool:
    """Whether a 400 says the prompt is longer than the model's context: llama.cpp's
    ``exceed_context_size_error``, OpenAI's ``context_length_exceeded``, or a message
    that says so."""
    try:
        body = response.json()
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        named = f"{error.get('type', '')} {error.get('code', '')}".lower()
        if "exceed_context" in named or "context_length" in named:
            return True
    lowered = detail.lower()
    return "context" in lowered and any(phrase in lowered for phrase in _OVERFLOW_PHRASES)


@dataclass(frozen=True)
class FailedTry:
    error: ProviderError
    wait: float  # seconds before another try could help
