"""Any OpenAI-compatible Chat Completions server, streamed: ``POST {base_url}/chat/completions``.

One client for OpenAI, OpenRouter, vLLM, Ollama, llama.cpp's server and LM Studio: tools as
functions, tool calls reassembled from their streamed argument fragments by index, usage
from the final chunk (``stream_options.include_usage``). The system prefix is one system
message, byte-identical across turns, so servers with automatic prefix caching hit it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

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
from docpilot_runtime.providers.upstream import bearer_headers

_STOP_REASONS = {
    "stop": STOP_END,
    "tool_calls": STOP_TOOL_USE,
    "function_call": STOP_TOOL_USE,
    "length": STOP_MAX_TOKENS,
    "content_filter": STOP_REFUSAL,
}
# OpenAI's reasoning models refuse the older max_tokens field; other servers may not know
# the newer one, so it is sent only to OpenAI itself or for those model names.
_NEEDS_MAX_COMPLETION_TOKENS = re.compile(r"(o\d|gpt-5)")
# Mid-stream error types that say nothing about our request, so another try may succeed.
_REQUEST_FAULTS = frozenset({"invalid_request_error", "invalid_request", "bad_request"})


def openai_messages(system: Sequence[str], messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The system blocks as one system message (joined by blank lines), then our messages."""
    out: list[dict[str, Any]] = []
    prefix = "\n\n".join(text for text in system if text)
    if prefix:
        out.append({"role": "system", "content": prefix})
    for position, message in enumerate(messages):
        if message.role == "user":
            out.append({"role": "user", "content": message.content})
        elif message.role == "tool":
            if not message.tool_call_id:
                raise ValueError(f"message {position}: a tool message needs tool_call_id")
            out.append(
                {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
            )
        elif message.role == "assistant":
            out.append(_assistant(message))
        else:
            raise ValueError(f"message {position}: unknown role {message.role!r}")
    return out


def _assistant(message: Message) -> dict[str, Any]:
    if not message.tool_calls:
        return {"role": "assistant", "content": message.content}
    return {
        "role": "assistant",
        "content": message.content or None,
        "tool_calls": [
            {
                "id": call.id,
                "type": "function",
                # The model's own bytes, so the prompt stays a prefix of the next step's.
                "function": {"name": call.name, "arguments": call.raw_arguments or "{}"},
            }
            for call in message.tool_calls
        ],
    }


def openai_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
            },
        }
        for tool in tools
    ]


class OpenAIChatProvider(HTTPProvider):
    """Chat Completions; `Authorization: Bearer` only when api_key_env names a key."""

    kind = "openai"

    @property
    def url(self) -> str:
        return f"{self._base_url}/chat/completions"

    def request_headers(self, key: str) -> dict[str, str]:
        return bearer_headers(key, {"content-type": "application/json"})

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
            "messages": openai_messages(system, messages),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            body["tools"] = openai_tools(tools)
            body["tool_choice"] = options.tool_choice
        body[self._max_tokens_field()] = max_tokens
        if self.settings.temperature is not None:
            body["temperature"] = self.settings.temperature
        if options.json_schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": options.json_schema, "strict": True},
            }
        if self.settings.effort:
            body["reasoning_effort"] = self.settings.effort
        return body

    def _max_tokens_field(self) -> str:
        host = urlsplit(self._base_url).hostname or ""
        if host == "api.openai.com" or _NEEDS_MAX_COMPLETION_TOKENS.match(self.model):
            return "max_completion_tokens"
        return "max_tokens"

    async def read_stream(self, response: httpx.Response, progress: StreamProgress) -> ModelReply:
        """Assemble the reply from the chunks up to ``data: [DONE]``, streaming deltas out."""
        stream = _ChunkStream(self, progress)
        async for sse in server_sent_events(response, progress.deadlines, carries_reply):
            if sse.data.strip() == "[DONE]":
                return stream.reply()
            await stream.take(sse)
        raise self.malformed("the stream ended before data: [DONE]")


def carries_reply(sse: ServerSentEvent) -> bool:
    """Whether a chunk is part of the reply for the stream's deadlines: text, a tool call,
    the finish, the usage or an error. The role-only chunk a server may send before the
    model has read the prompt (``delta: {role, content: null}``) is not."""
    try:
        chunk = json.loads(sse.data)
    except ValueError:
        return True  # "[DONE]", or a broken chunk the reader reports
    if not isinstance(chunk, dict) or chunk.get("error") or chunk.get("usage"):
        return True
    for choice in chunk.get("choices") or []:
        if not isinstance(choice, dict) or choice.get("finish_reason"):
            return True
        delta = choice.get("delta") or {}
        if not isinstance(delta, dict) or delta.get("content") or delta.get("tool_calls"):
            return True
    return False


@dataclass
class _PendingCall:
    id: str = ""
    name: str = ""
    parts: list[str] = field(default_factory=list)


class _ChunkStream:
    """The state of one streamed completion: text, tool calls by index, finish, usage."""

    def __init__(self, provider: OpenAIChatProvider, progress: StreamProgress) -> None:
        self.provider = provider
        self.progress = progress
        self.model = ""
        self.finish_reason = ""
        self.text: list[str] = []
        self.calls: dict[int, _PendingCall] = {}

    async def take(self, sse: ServerSentEvent) -> None:
        chunk = self._json(sse)
        error = chunk.get("error")
        if error:
            details = error if isinstance(error, dict) else {"message": str(error)}
            error_type = str(details.get("type") or details.get("code") or "")
            raise self.provider.stream_error(
                error_type,
                str(details.get("message", "")),
                retryable=error_type not in _REQUEST_FAULTS,
            )
        self.model = str(chunk.get("model") or self.model)
        self._take_usage(chunk.get("usage"))
        choices = chunk.get("choices") or []
        if not isinstance(choices, list):
            raise self.provider.malformed("choices is not a list")
        for choice in choices:
            if not isinstance(choice, dict):
                raise self.provider.malformed("a choice is not an object")
            if choice.get("index", 0) != 0:
                continue  # we never ask for n > 1
            delta = choice.get("delta") or {}
            if not isinstance(delta, dict):
                raise self.provider.malformed("a choice's delta is not an object")
            content = delta.get("content")
            if isinstance(content, str) and content:
                self.text.append(content)
                await self.progress.emit("text", content)
            await self._take_tool_calls(delta.get("tool_calls"))
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])

    def reply(self) -> ModelReply:
        if not self.finish_reason:
            raise self.provider.malformed("data: [DONE] arrived without a finish_reason")
        calls = []
        for index in sorted(self.calls):
            pending = self.calls[index]
            if not pending.name:
                raise self.provider.malformed(f"tool call {index} never named its function")
            raw = "".join(pending.parts)
            arguments = parse_tool_arguments(raw)
            calls.append(ToolCall(pending.id or f"call_{index}", pending.name, arguments, raw))
        stop = _STOP_REASONS.get(self.finish_reason, self.finish_reason)
        if calls and stop == STOP_END:
            stop = STOP_TOOL_USE  # some local servers say "stop" after a tool call
        return ModelReply(
            text="".join(self.text),
            tool_calls=tuple(calls),
            stop_reason=stop,
            usage=self.progress.usage,
            model=self.model,
        )

    async def _take_tool_calls(self, tool_calls: object) -> None:
        if tool_calls is None:
            return
        if not isinstance(tool_calls, list):
            raise self.provider.malformed("delta.tool_calls is not a list")
        for position, fragment in enumerate(tool_calls):
            if not isinstance(fragment, dict):
                raise self.provider.malformed("a tool call fragment is not an object")
            index = fragment.get("index", position)
            if isinstance(index, bool) or not isinstance(index, int):
                raise self.provider.malformed("a tool call fragment has a non-integer index")
            pending = self.calls.setdefault(index, _PendingCall())
            if fragment.get("id") and not pending.id:
                pending.id = str(fragment["id"])
            function = fragment.get("function") or {}
            if not isinstance(function, dict):
                raise self.provider.malformed("a tool call's function is not an object")
            if function.get("name") and not pending.name:
                pending.name = str(function["name"])
            piece = function.get("arguments")
            if isinstance(piece, dict):  # a few servers send the object, not its JSON
                piece = json.dumps(piece, ensure_ascii=False)
            if isinstance(piece, str) and piece:
                pending.parts.append(piece)
                await self.progress.emit(f"tool:{pending.name}", piece)

    def _take_usage(self, usage: object) -> None:
        if not isinstance(usage, dict):
            return
        prompt = _count(usage.get("prompt_tokens"))
        details = usage.get("prompt_tokens_details")
        cached = _count(details.get("cached_tokens")) if isinstance(details, dict) else 0
        self.progress.usage = Usage(
            input_tokens=max(prompt - cached, 0),
            output_tokens=_count(usage.get("completion_tokens")),
            cache_read_tokens=cached,
        )

    def _json(self, sse: ServerSentEvent) -> dict[str, Any]:
        try:
            chunk = json.loads(sse.data)
        except ValueError:
            raise self.provider.malformed("a data chunk is not JSON") from None
        if not isinstance(chunk, dict):
            raise self.provider.malformed("a data chunk is not a JSON object")
        return chunk


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
