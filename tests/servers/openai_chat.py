"""A local server speaking OpenAI's streamed ``POST /v1/chat/completions``, scripted.

The same script as ``servers.anthropic_messages`` (`Reply`, `ToolUse`, `Fault`,
`answer_reply`, `tool_reply`, `text_call`), served as real Chat Completions chunks:
``data: {...}`` lines (``service_tier`` and, unless ``stream_options.include_obfuscation``
is false, an ``obfuscation`` padding string, as the hosted API adds them; the first delta
carries ``refusal: null``) with ``choices[0].delta.content`` text in several pieces,
``delta.tool_calls`` fragments (id and name first, then the argument JSON in small
pieces, by index), a chunk with ``finish_reason``, the usage chunk when
``stream_options.include_usage`` asks for it (``prompt_tokens`` including
``prompt_tokens_details.cached_tokens``), then ``data: [DONE]``. Requests are recorded
and checked like the real API checks them.

``llama_cpp=True`` serves as llama.cpp's ``llama-server`` does (measured on the build
the local model runs, issue 22): while a reply's ``first_token_delay`` passes it writes
SSE comment pings (``:``), then the role-only chunk (``content: null``) together with the
first token; chunks carry no ``logprobs`` and no ``usage: null``; the usage chunk adds
``timings``; a prompt longer than ``n_ctx`` tokens (estimated at four characters a token)
is refused with HTTP 400 ``exceed_context_size_error`` (its message, ``n_prompt_tokens``
and ``n_ctx``); requests are checked only as llama-server checks them (`check_llama_request`:
no model needed, lenient about roles and tool pairing) and refusals carry its error shape
(``code`` = the status, ``message``, its ``type`` names); with ``jinja=False`` (a server started without ``--jinja``) any request
with tools is refused with HTTP 500 ``tools param requires --jinja flag``; a
``response_format`` schema is checked, and so is the scripted reply against it. The
OpenAI flavour sends its role chunk (``content: ""``) at once and then waits.

    with OpenAIChatServer([answer_reply(markdown="Use `pip` [1].")]) as server:
        settings = ProviderSettings(kind="openai", base_url=server.base_url, model="gpt-4o")
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import jsonschema

from .anthropic_messages import (
    Answer,
    Fault,
    RecordedRequest,
    Reply,
    ScriptedServer,
    Step,
    ToolUse,
    Wait,
    answer_reply,
    chunks,
    text_call,
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
    "text_call",
    "tool_reply",
]

CREATED = 1_764_000_000  # a fixed timestamp: the chunks are reproducible


def _data(payload: dict[str, Any]) -> str:
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"


class OpenAIChatServer(ScriptedServer):
    """OpenAI-compatible Chat Completions: point a provider's base_url at ``base_url``."""

    path = "/v1/chat/completions"
    url_suffix = "/v1"

    def __init__(
        self,
        steps: Any = (),
        *,
        llama_cpp: bool = False,
        n_ctx: int = 0,
        jinja: bool = True,
        **options: Any,
    ) -> None:
        super().__init__(steps, **options)
        self.llama_cpp = llama_cpp
        self.n_ctx = n_ctx  # 0: no context limit
        self.jinja = jinja

    def decide(self, request: RecordedRequest) -> Answer:
        if self.llama_cpp and request.path == self.path:
            refused = self._llama_refusal(request.body)
            if refused is not None:
                with self._lock:
                    self.requests.append(request)
                return refused
        return super().decide(request)

    def _llama_refusal(self, body: dict[str, Any]) -> Answer | None:
        """What llama-server answers before it runs the model, when it refuses."""
        if body.get("tools") and not self.jinja:
            error = {"code": 500, "message": "tools param requires --jinja flag",
                     "type": "server_error"}
            return Answer(status=500, json_body={"error": error})
        tokens = prompt_tokens(body)
        if self.n_ctx and tokens > self.n_ctx:
            error = {
                "code": 400,
                "message": f"request ({tokens} tokens) exceeds the available context size "
                f"({self.n_ctx} tokens), try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": tokens,
                "n_ctx": self.n_ctx,
            }
            return Answer(status=400, json_body={"error": error})
        return None

    def keepalive(self) -> str:
        return ":\n\n" if self.llama_cpp else ""

    def sent_key(self, headers: dict[str, str]) -> str:
        return headers.get("authorization", "").removeprefix("Bearer ")

    def error_answer(self, status: int, error_type: str, message: str) -> Answer:
        if self.llama_cpp:  # llama-server's shape: the status as code, its own type names
            error = {"code": status, "message": message,
                     "type": LLAMA_ERROR_TYPES.get(status, error_type)}
            return Answer(status=status, json_body={"error": error})
        error = {"message": message, "type": error_type, "param": None, "code": None}
        return Answer(status=status, json_body={"error": error})

    def check_request(self, request: RecordedRequest) -> str:
        if self.llama_cpp:
            return check_llama_request(request.body)
        return check_chat_request(request.body)

    def _chunk(self, number: int, body: dict[str, Any], **choice: Any) -> str:
        if self.llama_cpp:
            return _data({
                "choices": [{"finish_reason": None, "index": 0, **choice}],
                "created": CREATED,
                "id": f"chatcmpl-{number:04d}",
                "model": body.get("model", ""),
                "system_fingerprint": "b0-unknown",
                "object": "chat.completion.chunk",
            })
        payload: dict[str, Any] = {
            "id": f"chatcmpl-{number:04d}",
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": body.get("model", ""),
            "service_tier": "default",
            "system_fingerprint": "fp_scripted",
            "choices": [{"index": 0, "logprobs": None, "finish_reason": None, **choice}],
        }
        if _wants_usage(body):
            payload["usage"] = None  # as the real API: null on every chunk but the last
        if (body.get("stream_options") or {}).get("include_obfuscation", True) is not False:
            # Padding of random length against size side channels, on by default.
            payload["obfuscation"] = "Qx7"[: 1 + len(json.dumps(choice)) % 3] * 2
        return _data(payload)

    def opening_events(self, number: int, body: dict[str, Any]) -> list[str]:
        if not self.llama_cpp:  # the hosted API's first delta also says there is no refusal
            role = {"role": "assistant", "content": "", "refusal": None}
            return [self._chunk(number, body, delta=role)]
        role = {"role": "assistant", "content": None}
        return [self._chunk(number, body, delta=role)]

    def text_events(self, text: str, number: int, body: dict[str, Any]) -> list[str]:
        return [
            self._chunk(number, body, delta={"content": piece})
            for piece in chunks(text, self.chunk_chars)
        ]

    def reply_events(
        self, reply: Reply, number: int, body: dict[str, Any]
    ) -> Iterator[str | Wait]:
        problem = self._schema_problem(reply, body)
        if problem:
            yield _data({"error": {"code": 500, "message": problem, "type": "server_error"}})
            return
        if reply.first_token_delay and self.llama_cpp:
            yield Wait(reply.first_token_delay)  # pings; the role chunk comes with a token
        yield from self.opening_events(number, body)
        if reply.first_token_delay and not self.llama_cpp:
            yield Wait(reply.first_token_delay)
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
        finish = reply.stop_reason or (
            "length" if reply.cut else "tool_calls" if reply.tool_calls else "stop"
        )
        yield self._chunk(number, body, delta={}, finish_reason=finish)
        if _wants_usage(body):
            yield _data(self._usage_chunk(reply, number, body))
        yield "data: [DONE]\n\n"

    def _usage_chunk(self, reply: Reply, number: int, body: dict[str, Any]) -> dict[str, Any]:
        prompt = reply.input_tokens + reply.cache_read_tokens + reply.cache_write_tokens
        usage: dict[str, Any] = {
            "prompt_tokens": prompt,
            "completion_tokens": reply.output_tokens,
            "total_tokens": prompt + reply.output_tokens,
            "prompt_tokens_details": {"cached_tokens": reply.cache_read_tokens},
        }
        chunk: dict[str, Any] = {
            "id": f"chatcmpl-{number:04d}",
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": body.get("model", ""),
            "choices": [],
            "usage": usage,
        }
        if self.llama_cpp:
            # timings count only the prompt tokens read this time (prompt_n) beside those
            # taken from the slot's cache (cache_n), as llama-server reports them.
            read = reply.input_tokens + reply.cache_write_tokens
            prompt_ms = max(1000.0 * reply.first_token_delay, 1.0)
            predicted_ms = 100.0 * max(reply.output_tokens, 1)
            chunk["system_fingerprint"] = "b0-unknown"
            chunk["timings"] = {
                "cache_n": reply.cache_read_tokens,
                "prompt_n": read,
                "prompt_ms": prompt_ms,
                "prompt_per_token_ms": prompt_ms / max(read, 1),
                "prompt_per_second": 1000.0 * read / prompt_ms,
                "predicted_n": reply.output_tokens,
                "predicted_ms": predicted_ms,
                "predicted_per_token_ms": predicted_ms / max(reply.output_tokens, 1),
                "predicted_per_second": 1000.0 * reply.output_tokens / predicted_ms,
            }
        else:
            usage["completion_tokens_details"] = {"reasoning_tokens": 0}
        return chunk

    def _schema_problem(self, reply: Reply, body: dict[str, Any]) -> str:
        """Why a scripted reply could not have come from a server that enforces the
        request's ``response_format`` schema ("" when it could)."""
        spec = body.get("response_format")
        if not isinstance(spec, dict) or spec.get("type") != "json_schema":
            return ""
        schema = (spec.get("json_schema") or {}).get("schema")
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
            jsonschema.validate(json.loads(reply.text), schema)
        except (ValueError, jsonschema.ValidationError, jsonschema.SchemaError) as exc:
            return f"the script breaks the response_format schema: {str(exc)[:200]}"
        return ""

    def error_event(self, error_type: str) -> str:
        return _data({"error": {"message": "The server is overloaded", "type": error_type}})

    def broken_event(self) -> str:
        return 'data: {"id": "chatcmpl-broken", "choices": [{"index": 0, "delta": {"cont\n\n'


def prompt_tokens(body: dict[str, Any]) -> int:
    """A prompt's length in tokens as the scripted server counts it: four characters
    of its messages and tools (JSON) to a token."""
    return len(json.dumps([body.get("messages"), body.get("tools")], ensure_ascii=False)) // 4


def _wants_usage(body: dict[str, Any]) -> bool:
    options = body.get("stream_options")
    return isinstance(options, dict) and options.get("include_usage") is True


# The error types llama-server names per status (its error_type enum).
LLAMA_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    500: "server_error",
    501: "not_supported_error",
    503: "unavailable_error",
}


def check_llama_request(body: dict[str, Any]) -> str:
    """Why llama-server would refuse ``body`` with 400, or "" if it takes it. It is far
    more lenient than the hosted API (measured on the pinned build): no model needed, any
    role, a tool reply with no call before it, ``tools: []`` and both token limits are all
    taken; it refuses messages that are not an array and a ``response_format`` schema it
    cannot turn into a grammar."""
    if body.get("stream") is not True:
        return "this scripted server only streams: send stream: true"
    if not isinstance(body.get("messages"), list):
        return "Expected 'messages' to be an array"
    spec = body.get("response_format")
    if isinstance(spec, dict) and spec.get("type") == "json_schema":
        schema = (spec.get("json_schema") or {}).get("schema")
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as exc:
            return ("Unable to generate parser for this template. Automatic parser "
                    f"generation failed: JSON schema error: {exc.message}")
    return ""


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
