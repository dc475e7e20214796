"""The messages, tool specs, tool calls, usage and replies every provider speaks in.

The turn builds Messages and ToolSpecs; a provider returns a ModelReply. Both vendors'
wire formats are translated to and from these shapes in their own modules.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

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
class CallOptions:
    """What one call asks beyond its prompt: whether the reply must call a tool (``required``:
    one of the tools offered; offer only `answer` to require that one, which every server
    honours, where a named choice is ignored by some), and a JSON Schema the reply's text
    must follow (OpenAI-compatible ``response_format``; grammar-constrained on llama.cpp)."""

    tool_choice: Literal["auto", "required"] = "auto"
    json_schema: dict[str, Any] | None = None


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
