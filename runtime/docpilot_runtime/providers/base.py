"""The shapes every model provider shares, its settings, and the one streamed HTTP call.

A provider turns a stable system prefix, a growing message list and tool specs into one
streamed model call and returns a ModelReply. What may go wrong is a ProviderError, which
the answer ladder reads as "ask the next provider"; nothing a provider raises, logs or
reprs ever contains the API key.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import httpx

PROVIDER_KINDS = ("anthropic", "openai")
DEFAULT_BASE_URLS = {
    "anthropic": "https://api.anthropic.com",
    "openai": "https://api.openai.com/v1",
}
# Sent as Anthropic's output_config.effort / OpenAI's reasoning_effort; "" sends nothing.
EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")

# A reader is waiting for the answer, so retries are few and short: a server asking for a
# longer pause than MAX_RETRY_WAIT_SECONDS gets none, and the ladder moves on instead.
RETRY_BACKOFF_SECONDS = 0.25
MAX_RETRY_WAIT_SECONDS = 2.0
MAX_RETRIES = 5
ERROR_DETAIL_CHARS = 300  # of an upstream error message quoted in ours

# Stop reasons are normalised across vendors to these four; anything else is passed on as
# the vendor spelled it.
STOP_END = "end_turn"
STOP_TOOL_USE = "tool_use"
STOP_MAX_TOKENS = "max_tokens"
STOP_REFUSAL = "refusal"


@dataclass(frozen=True)
class ToolSpec:
    """A tool the model may call: its name, what it does, a JSON Schema for its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]  # a JSON Schema object


@dataclass(frozen=True)
class ToolCall:
    """One call the model made; `arguments` is None when its JSON did not parse to an object."""

    id: str
    name: str
    arguments: dict[str, Any] | None
    raw_arguments: str  # exactly what the model sent


@dataclass(frozen=True)
class Message:
    """One entry of the conversation the turn sends; observations are appended, never edited.

    `native_content` is an assistant message's content in its provider's own JSON, kept so
    the same provider kind gets it back byte for byte (Anthropic refuses a tool loop whose
    thinking blocks were dropped or rebuilt); other providers build from the plain fields.
    Build assistant messages with ``ModelReply.to_message()`` so it is carried along.
    """

    role: Literal["user", "assistant", "tool"]
    content: str = ""  # user text / assistant text / tool result text
    tool_calls: tuple[ToolCall, ...] = ()  # assistant only
    tool_call_id: str = ""  # tool only
    native_content: str = ""  # assistant only: JSON, see above
    native_kind: str = ""  # the provider kind native_content belongs to


@dataclass(frozen=True)
class Usage:
    """Tokens one call (or, summed with +, one turn) used.

    `input_tokens` counts only uncached input; the prompt's full length is input_tokens +
    cache_read_tokens + cache_write_tokens, on both vendors (OpenAI's prompt_tokens includes
    its cached tokens; we subtract them so the four fields never overlap).
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def prompt_tokens(self) -> int:
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )


@dataclass(frozen=True)
class ModelReply:
    """A complete streamed reply: the text, the tool calls, why it stopped, what it used."""

    text: str
    tool_calls: tuple[ToolCall, ...]
    stop_reason: str  # "end_turn" | "tool_use" | "max_tokens" | "refusal" | vendor's own
    usage: Usage
    model: str = ""  # the model the server says answered ("" when it did not say)
    native_content: str = ""  # see Message.native_content
    native_kind: str = ""

    def to_message(self) -> Message:
        """This reply as the assistant message to append before the tool results."""
        return Message(
            role="assistant",
            content=self.text,
            tool_calls=self.tool_calls,
            native_content=self.native_content,
            native_kind=self.native_kind,
        )


ErrorKind = Literal["config", "connection", "timeout", "status", "malformed", "stream_error"]


class ProviderError(Exception):
    """A provider could not answer: timeout, connection failure, HTTP error, broken stream.

    `kind` says which; `status` is the HTTP status when there was one; `retryable` says a
    later try might succeed (the ladder moves on either way); `usage` is what the failed
    call had already used, as far as the stream told us. The message names the provider
    and the setting at fault and never contains the key.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: ErrorKind,
        provider: str = "",
        status: int | None = None,
        retryable: bool = False,
        usage: Usage | None = None,
    ) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.provider = provider
        self.status = status
        self.retryable = retryable
        self.usage = usage or Usage()


# on_delta(kind, text): kind is "text" for assistant text, or "tool:<name>" for a chunk of
# a tool call's argument JSON, in the order the model produced them.
DeltaSink = Callable[[str, str], Awaitable[None]]


class Provider(Protocol):
    """The one shape the turn relies on."""

    kind: str
    model: str
    name: str  # e.g. "anthropic:claude-opus-5-5", for usage and records

    async def complete(
        self,
        system: Sequence[str],
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        on_delta: DeltaSink | None = None,
        max_tokens: int | None = None,
    ) -> ModelReply:
        """One model call; the reply streams through on_delta as it arrives."""
        ...

    async def aclose(self) -> None:
        """Release the connection pool if the provider created it."""
        ...


# --- settings ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProviderSettings:
    """One `[[providers]]` entry of the runtime settings file, in ladder order.

    `timeout` is how long to wait for the first byte and then between streamed chunks
    (not a cap on the whole answer, which may stream for longer); `retries` extra tries
    are made only before any of the answer has streamed.
    """

    kind: str  # "anthropic" | "openai" (any OpenAI-compatible Chat Completions server)
    base_url: str
    model: str
    api_key_env: str = ""  # the NAME of the variable holding the key; "" sends no key
    timeout: float = 30.0
    connect_timeout: float = 5.0
    max_tokens: int = 1500
    retries: int = 1
    effort: str = ""  # "" = the model's default

    @property
    def name(self) -> str:
        return f"{self.kind}:{self.model}"


_SETTING_KEYS = (
    "kind",
    "base_url",
    "model",
    "api_key_env",
    "timeout",
    "connect_timeout",
    "max_tokens",
    "retries",
    "effort",
)
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def provider_settings(table: Mapping[str, Any], where: str) -> ProviderSettings:
    """Check one `[[providers]]` TOML table; a bad one raises ValueError naming where and key.

    `base_url` defaults to the vendor's public endpoint for its kind. A value that might be
    a secret (an `api_key`, a malformed `api_key_env`) is never quoted back.
    """
    if "api_key" in table:
        raise ValueError(
            f"{where}: api_key is not allowed in the settings file; put the key in an "
            "environment variable and name that variable with api_key_env"
        )
    unknown = sorted(set(table) - set(_SETTING_KEYS))
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {unknown} (known: {list(_SETTING_KEYS)})")
    kind = table.get("kind")
    if kind not in PROVIDER_KINDS:
        raise ValueError(f"{where}: kind must be one of {list(PROVIDER_KINDS)}, got {kind!r}")
    model = table.get("model")
    if not isinstance(model, str) or not re.fullmatch(r"\S+", model):
        raise ValueError(f"{where}: model must be a model name without spaces, got {model!r}")
    base_url = table.get("base_url", DEFAULT_BASE_URLS[kind])
    if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
        raise ValueError(f"{where}: base_url must start with http:// or https://, got {base_url!r}")
    api_key_env = table.get("api_key_env", "")
    if not isinstance(api_key_env, str) or (api_key_env and not _ENV_NAME.fullmatch(api_key_env)):
        # Not quoted: a key pasted here by mistake must not end up in a log.
        raise ValueError(
            f"{where}: api_key_env must be the name of an environment variable "
            "(letters, digits, underscores), not the key itself"
        )
    effort = table.get("effort", "")
    if effort not in ("", *EFFORTS):
        raise ValueError(f"{where}: effort must be one of {list(EFFORTS)}, got {effort!r}")
    return ProviderSettings(
        kind=kind,
        base_url=base_url,
        model=model,
        api_key_env=api_key_env,
        timeout=_positive_seconds(table, "timeout", 30.0, where),
        connect_timeout=_positive_seconds(table, "connect_timeout", 5.0, where),
        max_tokens=_int_in(table, "max_tokens", 1500, 1, 1_000_000, where),
        retries=_int_in(table, "retries", 1, 0, MAX_RETRIES, where),
        effort=effort,
    )


def _positive_seconds(table: Mapping[str, Any], key: str, default: float, where: str) -> float:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{where}: {key} must be a number of seconds, got {value!r}")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{where}: {key} must be positive seconds, got {value!r}")
    return float(value)


def _int_in(
    table: Mapping[str, Any], key: str, default: int, low: int, high: int, where: str
) -> int:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{where}: {key} must be an integer from {low} to {high}, got {value!r}")
    return value


# --- the streamed call ---------------------------------------------------------------------


@dataclass(frozen=True)
class ServerSentEvent:
    event: str  # "message" when the server named none
    data: str


async def server_sent_events(response: httpx.Response) -> AsyncIterator[ServerSentEvent]:
    """The events of a text/event-stream body (comments and id/retry fields skipped)."""
    event, data = "", list[str]()
    async for line in response.aiter_lines():
        if not line:
            if data:
                yield ServerSentEvent(event or "message", "\n".join(data))
            event, data = "", []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
    if data:  # a last event without its blank line: the vendors' parsers keep it too
        yield ServerSentEvent(event or "message", "\n".join(data))


@dataclass
class StreamProgress:
    """What one try has streamed so far: whether the answer began, and the usage seen."""

    on_delta: DeltaSink | None
    started: bool = False
    usage: Usage = field(default_factory=Usage)

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
        self._base_url = settings.base_url.rstrip("/")
        self._key = ""
        if settings.api_key_env:
            self._key = os.environ.get(settings.api_key_env, "")
            if not self._key:
                raise ProviderError(
                    f"provider {self.name}: environment variable {settings.api_key_env} "
                    "(named by api_key_env) is not set or empty",
                    kind="config",
                    provider=self.name,
                )
        self._headers = {"accept": "text/event-stream", **self.request_headers(self._key)}
        self._timeout = httpx.Timeout(settings.timeout, connect=settings.connect_timeout)
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
    ) -> ModelReply:
        """Stream one reply, retrying only failures that happen before the answer begins."""
        body = self.request_body(system, messages, tools, max_tokens or self.settings.max_tokens)
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
        try:
            async with self._client.stream(
                "POST", self.url, json=body, headers=self._headers, timeout=self._timeout
            ) as response:
                if response.status_code == 200:
                    return await self.read_stream(response, progress)
                await response.aread()
                return self._status_failure(response, backoff)
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
        if status in (401, 403):
            if self.settings.api_key_env:
                detail = f"it rejected the key from {self.settings.api_key_env} (api_key_env)"
            else:
                detail = "it wants a key; set api_key_env to the variable holding one"
        elif status == 404:
            detail = f"check base_url and model {self.model!r}"
        else:
            detail = self._scrub(upstream_error_message(response))[:ERROR_DETAIL_CHARS]
        error = self._failure(
            f"{head}: {detail}", kind="status", status=status, retryable=retryable
        )
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

    def _scrub(self, text: str) -> str:
        return text.replace(self._key, "***") if self._key else text


@dataclass(frozen=True)
class FailedTry:
    error: ProviderError
    wait: float  # seconds before another try could help


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


def retry_after_seconds(response: httpx.Response, default: float) -> float:
    """The server's Retry-After in seconds when it gives one as a number, else default."""
    try:
        seconds = float(response.headers.get("retry-after", ""))
    except ValueError:
        return default
    return seconds if math.isfinite(seconds) and seconds >= 0 else default


def parse_tool_arguments(raw: str) -> dict[str, Any] | None:
    """The argument object a model sent, or None if it is not a JSON object.

    Nothing at all counts as no arguments ({}): Anthropic streams no JSON for a call
    without parameters, and some OpenAI-compatible servers send "".
    """
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
