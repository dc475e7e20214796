"""Anthropic's Messages API, streamed: ``POST {base_url}/v1/messages`` with tool use.

The system prefix goes as text blocks with ``cache_control`` on the last one. Anthropic
caches tools, then system, then messages, so tool definitions, platform rules and the site
profile form one cached prefix that every turn of a site shares; retrieved excerpts and
history travel in the messages after it and never invalidate it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import httpx

from docpilot_runtime.providers.messages import (
    STOP_END,
    STOP_MAX_TOKENS,
    STOP_REFUSAL,
    STOP_TOOL_USE,
    CallOptions,
    Message,
    ModelReply,
    ToolCall,
    ToolSpec,
    Usage,
    parse_tool_arguments,
)
from docpilot_runtime.providers.sse import ServerSentEvent, server_sent_events
from docpilot_runtime.providers.streamed_call import HTTPProvider, StreamProgress

ANTHROPIC_VERSION = "2023-06-01"
# Error events worth another try when nothing has streamed yet (the others are our fault).
RETRYABLE_STREAM_ERRORS = frozenset(
    {"overloaded_error", "api_error", "rate_limit_error", "timeout_error"}
)
_STOP_REASONS = {
    "end_turn": STOP_END,
    "stop_sequence": STOP_END,
    "tool_use": STOP_TOOL_USE,
    "max_tokens": STOP_MAX_TOKENS,
    "model_context_window_exceeded": STOP_MAX_TOKENS,
    "refusal": STOP_REFUSAL,
}


def anthropic_system(system: Sequence[str]) -> list[dict[str, Any]]:
    """The system blocks, the cache breakpoint on the last (empty blocks are refused upstream)."""
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text} for text in system if text]
    if blocks:
        blocks[-1]["cache_control"] = {"type": "ephemeral"}
    return blocks


def anthropic_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}
        for tool in tools
    ]


def anthropic_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Our messages in Messages API form.

    Tool results travel in a user message, consecutive ones merged into one (the API wants
    every result of an assistant turn in the single user message that follows it).
    """
    out: list[dict[str, Any]] = []
    previous_was_tool = False
    for position, message in enumerate(messages):
        if message.role == "tool":
            if not message.tool_call_id:
                raise ValueError(f"message {position}: a tool message needs tool_call_id")
            block = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id,
                "content": message.content,
            }
            if previous_was_tool:
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif message.role == "assistant":
            out.append({"role": "assistant", "content": _assistant_content(message)})
        elif message.role == "user":
            out.append({"role": "user", "content": message.content})
        else:
            raise ValueError(f"message {position}: unknown role {message.role!r}")
        previous_was_tool = message.role == "tool"
    return out


def _assistant_content(message: Message) -> str | list[dict[str, Any]]:
    if message.native_kind == "anthropic" and message.native_content:
        # Exactly as received: thinking blocks must come back unmodified.
        content: list[dict[str, Any]] = json.loads(message.native_content)
        return content
    blocks: list[dict[str, Any]] = []
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    for call in message.tool_calls:
        blocks.append(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments or {}}
        )
    return blocks or message.content


class AnthropicProvider(HTTPProvider):
    """Claude through the Messages API; `x-api-key` from the variable api_key_env names."""

    kind = "anthropic"

    @property
    def url(self) -> str:
        # base_url is the host ("https://api.anthropic.com"); one that already ends in /v1
        # is taken as meant, not doubled.
        base = self._base_url.removesuffix("/v1")
        return f"{base}/v1/messages"

    def request_headers(self, key: str) -> dict[str, str]:
        headers = {"anthropic-version": ANTHROPIC_VERSION, "content-type": "application/json"}
        if key:
            headers["x-api-key"] = key
        return headers

    def request_body(
        self,
        system: Sequence[str],
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        max_tokens: int,
        options: CallOptions,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens,
            "stream": True,
        }
        if self.settings.temperature is not None:
            body["temperature"] = self.settings.temperature
        system_blocks = anthropic_system(system)
        if system_blocks:
            body["system"] = system_blocks
        body["messages"] = anthropic_messages(messages)
        if tools:
            body["tools"] = anthropic_tools(tools)
            # auto unless the owner's tool_choice asks otherwise: Claude models thinking
            # with extended thinking refuse forced tool use.
            forced = options.tool_choice == "required"
            body["tool_choice"] = {"type": "any" if forced else "auto"}
        if self.settings.effort:
            body["output_config"] = {"effort": self.settings.effort}
        return body

    async def read_stream(self, response: httpx.Response, progress: StreamProgress) -> ModelReply:
        """Assemble the reply from message_start ... message_stop, streaming deltas out."""
        stream = _MessageStream(self, progress)
        async for sse in server_sent_events(response, progress.deadlines, _carries_reply):
            if await stream.take(sse):
                return stream.reply()
        if not stream.began:
            raise self.malformed("the stream ended before message_start")
        raise self.malformed("the stream ended before message_stop")


# Events that carry the reply, for the stream's deadlines: message_start, an empty
# content_block_start and ping come before the model has written anything.
_REPLY_EVENTS = frozenset(
    {"content_block_delta", "content_block_stop", "message_delta", "message_stop", "error"}
)


def _carries_reply(sse: ServerSentEvent) -> bool:
    return sse.event in _REPLY_EVENTS


class _MessageStream:
    """The state of one streamed message: its content blocks by index, usage, stop reason."""

    def __init__(self, provider: AnthropicProvider, progress: StreamProgress) -> None:
        self.provider = provider
        self.progress = progress
        self.began = False
        self.model = ""
        self.stop_reason = ""
        self.usage: dict[str, int] = {}
        self.blocks: dict[int, dict[str, Any]] = {}
        self.json_parts: dict[int, list[str]] = {}

    async def take(self, sse: ServerSentEvent) -> bool:
        """Apply one event; True once message_stop has arrived."""
        event = self._json(sse)
        kind = event.get("type", sse.event)
        if kind == "ping":
            return False
        if kind == "error":
            error = event.get("error")
            if not isinstance(error, dict):
                error = {}
            error_type = str(error.get("type", ""))
            raise self.provider.stream_error(
                error_type,
                str(error.get("message", "")),
                retryable=error_type in RETRYABLE_STREAM_ERRORS,
            )
        if kind == "message_start":
            message = event.get("message")
            if not isinstance(message, dict):
                raise self.provider.malformed("message_start without a message object")
            self.began = True
            self.model = str(message.get("model") or "")
            self._merge_usage(message.get("usage"))
            return False
        if not self.began:
            raise self.provider.malformed(f"{kind} before message_start")
        if kind == "content_block_start":
            await self._start_block(event)
        elif kind == "content_block_delta":
            await self._apply_delta(event)
        elif kind == "content_block_stop":
            self._block(event)  # only checks the index: blocks are finished in reply()
        elif kind == "message_delta":
            delta = event.get("delta")
            if isinstance(delta, dict) and delta.get("stop_reason"):
                self.stop_reason = str(delta["stop_reason"])
            self._merge_usage(event.get("usage"))
        elif kind == "message_stop":
            if not self.stop_reason:
                raise self.provider.malformed("message_stop without a stop_reason")
            return True
        # Any other event type is skipped: Anthropic may add new ones at any time.
        return False

    def reply(self) -> ModelReply:
        text: list[str] = []
        calls: list[ToolCall] = []
        native: list[dict[str, Any]] = []
        for index in sorted(self.blocks):
            block = self.blocks[index]
            if block["type"] == "text":
                if not block.get("text"):
                    continue  # an empty text block would be refused when echoed back
                text.append(str(block["text"]))
            elif block["type"] == "tool_use":
                raw = "".join(self.json_parts[index])
                arguments = parse_tool_arguments(raw)
                calls.append(ToolCall(str(block["id"]), str(block["name"]), arguments, raw))
                block = {**block, "input": arguments if arguments is not None else {}}
            native.append(block)
        return ModelReply(
            text="".join(text),
            tool_calls=tuple(calls),
            stop_reason=_STOP_REASONS.get(self.stop_reason, self.stop_reason),
            usage=self.progress.usage,
            model=self.model,
            native_content=json.dumps(native, ensure_ascii=False, separators=(",", ":")),
            native_kind="anthropic",
        )

    async def _start_block(self, event: dict[str, Any]) -> None:
        index = self._index(event)
        block = event.get("content_block")
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise self.provider.malformed(f"content_block_start {index} without a typed block")
        if index in self.blocks:
            raise self.provider.malformed(f"content block {index} started twice")
        self.blocks[index] = dict(block)
        if block["type"] == "tool_use":
            if not block.get("id") or not block.get("name"):
                raise self.provider.malformed(f"tool_use block {index} without id and name")
            self.json_parts[index] = []
        elif block["type"] == "text":
            await self.progress.emit("text", str(block.get("text") or ""))

    async def _apply_delta(self, event: dict[str, Any]) -> None:
        index, block = self._block(event)
        delta = event.get("delta")
        if not isinstance(delta, dict):
            raise self.provider.malformed(f"content_block_delta {index} without a delta")
        kind = delta.get("type")
        if kind == "text_delta":
            piece = self._string(delta, "text", index)
            block["text"] = str(block.get("text") or "") + piece
            await self.progress.emit("text", piece)
        elif kind == "input_json_delta":
            if block["type"] != "tool_use":
                raise self.provider.malformed(f"input_json_delta for {block['type']} block")
            piece = self._string(delta, "partial_json", index)
            self.json_parts[index].append(piece)
            await self.progress.emit(f"tool:{block['name']}", piece)
        elif kind == "thinking_delta":
            block["thinking"] = str(block.get("thinking") or "") + self._string(
                delta, "thinking", index
            )
        elif kind == "signature_delta":
            block["signature"] = str(block.get("signature") or "") + self._string(
                delta, "signature", index
            )
        elif kind == "citations_delta":
            block["citations"] = [*(block.get("citations") or []), delta.get("citation")]
        # Other delta types belong to features this client never asks for.

    def _block(self, event: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        index = self._index(event)
        if index not in self.blocks:
            raise self.provider.malformed(f"{event.get('type')} for unknown content block {index}")
        return index, self.blocks[index]

    def _index(self, event: dict[str, Any]) -> int:
        index = event.get("index")
        if isinstance(index, bool) or not isinstance(index, int):
            raise self.provider.malformed(f"{event.get('type')} without an integer index")
        return index

    def _string(self, delta: dict[str, Any], key: str, index: int) -> str:
        value = delta.get(key)
        if not isinstance(value, str):
            raise self.provider.malformed(f"{delta.get('type')} {index} without a string {key}")
        return value

    def _json(self, sse: ServerSentEvent) -> dict[str, Any]:
        try:
            event = json.loads(sse.data)
        except ValueError:
            raise self.provider.malformed(f"{sse.event} event data is not JSON") from None
        if not isinstance(event, dict):
            raise self.provider.malformed(f"{sse.event} event data is not a JSON object")
        return event

    def _merge_usage(self, usage: object) -> None:
        """Take the counts given (message_delta's are cumulative, so later ones win)."""
        if not isinstance(usage, dict):
            return
        for key in (
            "input_tokens",
            "output_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
        ):
            value = usage.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                self.usage[key] = value
        self.progress.usage = Usage(
            input_tokens=self.usage.get("input_tokens", 0),
            output_tokens=self.usage.get("output_tokens", 0),
            cache_read_tokens=self.usage.get("cache_read_input_tokens", 0),
            cache_write_tokens=self.usage.get("cache_creation_input_tokens", 0),
        )
