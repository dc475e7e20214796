"""A local server speaking OpenAI's streamed ``POST /v1/chat/completions``, scripted.

The same script as ``servers.anthropic_messages`` (`Reply`, `ToolUse`, `Fault`,
`answer_reply`, `tool_reply`), served as real Chat Completions chunks: ``data: {...}``
lines with ``choices[0].delta.content`` text in several pieces, ``delta.tool_calls``
fragments (id and name first, then the argument JSON in small pieces, by index), a chunk
with ``finish_reason``, the usage chunk when ``stream_options.include_usage`` asks for
it (``prompt_tokens`` including ``prompt_tokens_details.cached_tokens``), then
``data: [DONE]``. Requests are recorded and checked like the real API checks them.

    with OpenAIChatServer([answer_reply(markdown="Use `pip` [1].")]) as server:
        settings = ProviderSettings(kind="openai", base_url=server.base_url, model="gpt-4o")
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from .anthropic_messages import (
    Answer,
    Fault,
    RecordedRequest,
    Reply,
    ScriptedServer,
    Step,
    ToolUse,
    answer_reply,
    chunks,
    tool_reply,
)

__all__ = [
    "Fault",
    "OpenAIChatServer",
    "RecordedRequest",
    "Reply",
    "Step",
    "ToolUse",
    "answer_reply",
    "check_chat_request",
    "tool_reply",
]

CREATED = 1_764_000_000  # a fixed timestamp: the chunks are reproducible


def _data(payload: dict[str, Any]) -> str:
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"


class OpenAIChatServer(ScriptedServer):
    """OpenAI-compatible Chat Completions: point a provider's base_url at ``base_url``."""

    path = "/v1/chat/completions"
    url_suffix = "/v1"

    def sent_key(self, headers: dict[str, str]) -> str:
        return headers.get("authorization", "").removeprefix("Bearer ")

    def error_answer(self, status: int, error_type: str, message: str) -> Answer:
        error = {"message": message, "type": error_type, "param": None, "code": None}
        return Answer(status=status, json_body={"error": error})

    def check_request(self, request: RecordedRequest) -> str:
        return check_chat_request(request.body)

    def _chunk(self, number: int, body: dict[str, Any], **choice: Any) -> str:
        payload: dict[str, Any] = {
            "id": f"chatcmpl-{number:04d}",
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": body.get("model", ""),
            "system_fingerprint": "fp_scripted",
            "choices": [{"index": 0, "logprobs": None, "finish_reason": None, **choice}],
        }
        if _wants_usage(body):
            payload["usage"] = None  # as the real API: null on every chunk but the last
        return _data(payload)

    def opening_events(self, number: int, body: dict[str, Any]) -> list[str]:
        return [self._chunk(number, body, delta={"role": "assistant", "content": ""})]

    def text_events(self, text: str, number: int, body: dict[str, Any]) -> list[str]:
        return [
            self._chunk(number, body, delta={"content": piece})
            for piece in chunks(text, self.chunk_chars)
        ]

    def reply_events(self, reply: Reply, number: int, body: dict[str, Any]) -> Iterator[str]:
        yield from self.opening_events(number, body)
        if reply.text:
            yield from self.text_events(reply.text, number, body)
        for index, call in enumerate(reply.tool_calls):
            opening = {
                "index": index,
                "id": call.id or f"call_{number:03d}_{index}",
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }
            yield self._chunk(number, body, delta={"tool_calls": [opening]})
            for piece in chunks(call.argument_text(), self.chunk_chars):
                fragment = {"index": index, "function": {"arguments": piece}}
                yield self._chunk(number, body, delta={"tool_calls": [fragment]})
        finish = reply.stop_reason or ("tool_calls" if reply.tool_calls else "stop")
        yield self._chunk(number, body, delta={}, finish_reason=finish)
        if _wants_usage(body):
            prompt = reply.input_tokens + reply.cache_read_tokens + reply.cache_write_tokens
            usage = {
                "prompt_tokens": prompt,
                "completion_tokens": reply.output_tokens,
                "total_tokens": prompt + reply.output_tokens,
                "prompt_tokens_details": {"cached_tokens": reply.cache_read_tokens},
                "completion_tokens_details": {"reasoning_tokens": 0},
            }
            yield _data(
                {
                    "id": f"chatcmpl-{number:04d}",
                    "object": "chat.completion.chunk",
                    "created": CREATED,
                    "model": body.get("model", ""),
                    "choices": [],
                    "usage": usage,
                }
            )
        yield "data: [DONE]\n\n"

    def error_event(self, error_type: str) -> str:
        return _data({"error": {"message": "The server is overloaded", "type": error_type}})

    def broken_event(self) -> str:
        return 'data: {"id": "chatcmpl-broken", "choices": [{"index": 0, "delta": {"cont\n\n'


def _wants_usage(body: dict[str, Any]) -> bool:
    options = body.get("stream_options")
    return isinstance(options, dict) and options.get("include_usage") is True


def check_chat_request(body: dict[str, Any]) -> str:
    """Why Chat Completions would refuse `body` with 400, or "" if it would take it."""
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "you must provide a model parameter"
    if body.get("stream") is not True:
        return "this scripted server only streams: send stream: true"
    if "max_tokens" in body and "max_completion_tokens" in body:
        return "max_tokens and max_completion_tokens cannot both be set"
    tools = body.get("tools", [])
    for position, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if (
            tool.get("type") != "function"
            or not isinstance(function, dict)
            or not function.get("name")
        ):
            return f"tools[{position}]: expected a function tool with a name"
    if tools == [] and "tools" in body:
        return "[] is too short - 'tools'"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: expected a non-empty array"
    open_calls: set[str] = set()
    for position, message in enumerate(messages):
        where = f"messages[{position}]"
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("system", "developer", "user", "assistant", "tool"):
            return f"{where}.role: invalid role {role!r}"
        if role == "tool":
            if message.get("tool_call_id") not in open_calls:
                return (
                    f"{where}: messages with role 'tool' must be a response to a preceding "
                    "message with 'tool_calls'"
                )
            open_calls.discard(message["tool_call_id"])
            continue
        if open_calls:
            return f"{where}: tool_call_ids did not have response messages: {sorted(open_calls)}"
        if role == "assistant" and message.get("tool_calls"):
            for call in message["tool_calls"]:
                function = call.get("function") or {}
                if call.get("type") != "function" or not isinstance(function.get("arguments"), str):
                    return f"{where}.tool_calls: function calls with string arguments expected"
                open_calls.add(call.get("id"))
        elif not isinstance(message.get("content"), str):
            return f"{where}.content: expected a string"
    return ""
