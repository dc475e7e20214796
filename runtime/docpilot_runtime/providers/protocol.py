"""The one shape the turn relies on (Provider), and the one failure it reads (ProviderError).

What may go wrong is a ProviderError, which the answer ladder reads as "ask the next
provider"; nothing a provider raises, logs or reprs ever contains the API key.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Literal, Protocol

from docpilot_runtime.providers.messages import CallOptions, Message, ModelReply, ToolSpec, Usage
from docpilot_runtime.settings.providers import ProviderSettings

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
        context_overflow: bool = False,
    ) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.provider = provider
        self.status = status
        self.retryable = retryable
        self.usage = usage or Usage()
        # The server said the prompt does not fit its context (HTTP 400): a shorter one may.
        self.context_overflow = context_overflow


# on_delta(kind, text): kind is "text" for assistant text, or "tool:<name>" for a chunk of
# a tool call's argument JSON, in the order the model produced them.
DeltaSink = Callable[[str, str], Awaitable[None]]


class Provider(Protocol):
    """The one shape the turn relies on."""

    kind: str
    model: str
    name: str  # e.g. "anthropic:claude-opus-5-5", for usage and records
    settings: ProviderSettings  # how the ladder prompts it (profile, excerpts, tool_choice)

    async def complete(
        self,
        system: Sequence[str],
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        on_delta: DeltaSink | None = None,
        max_tokens: int | None = None,
        options: CallOptions | None = None,
    ) -> ModelReply:
        """One model call; the reply streams through on_delta as it arrives."""
        ...

    async def aclose(self) -> None:
        """Release the connection pool if the provider created it."""
        ...
