"""The scripted stand-ins behave as the real servers do (issue 22).

The Anthropic stand-in's events are checked against the official SDK's typed stream
events, and the SDK's own streaming client rebuilds each scripted message from them. The
llama.cpp flavour of the OpenAI stand-in is checked against what llama.cpp's server sent
on this machine (recorded from the build the local model runs: role-only chunk, comment
pings, chunk keys, the usage chunk, the 400 and 500 bodies).
"""

from __future__ import annotations

import functools
import json
import time
from typing import Any

import httpx
import pytest
from servers.anthropic_messages import AnthropicServer, Reply, ToolUse, text_call
from servers.openai_chat import OpenAIChatServer


@functools.cache
def sdk_events() -> Any:
    """The official SDK's type of a streamed event. Imported when a test needs it, not at
    collection: the SDK and its pydantic models take a second to load, in every worker."""
    from anthropic.types import RawMessageStreamEvent
    from pydantic import TypeAdapter

    return TypeAdapter(RawMessageStreamEvent)


SCRIPTS = {
    "text": Reply(text="Use `pip install mkdocs-docpilot` [[/install/]]."),
    "tool": Reply(tool_calls=(ToolUse("answer", {"markdown": "Yes [[/a/]].", "citations": []}),)),
    "thinking-text-tool": Reply(
        text="Let me look.", thinking="The user asks…", tool_calls=(ToolUse("search_docs", {}),)
    ),
    "cut": Reply(text="A long answer that runs out", cut=True),
    "text-call": text_call("answer", {"markdown": "x"}),
}
# Recorded from llama.cpp's server (xllamacpp 2026.10.11549, Qwen2.5-Coder-0.5B), issue 22.
LLAMA_CHUNK_KEYS = {"choices", "created", "id", "model", "system_fingerprint", "object"}
LLAMA_ROLE_DELTA = {"role": "assistant", "content": None}
LLAMA_OVERFLOW_KEYS = {"code", "message", "type", "n_prompt_tokens", "n_ctx"}
LLAMA_TIMINGS_KEYS = {
    "cache_n",
    "prompt_n",
    "prompt_ms",
    "prompt_per_token_ms",
    "prompt_per_second",
    "predicted_n",
    "predicted_ms",
    "predicted_per_token_ms",
    "predicted_per_second",
}


def sse_events(server: AnthropicServer, reply: Reply) -> list[dict[str, Any]]:
    events = []
    for raw in server.reply_events(reply, 1, {"model": "claude-x"}):
        if isinstance(raw, str):
            data = next(line for line in raw.splitlines() if line.startswith("data: "))
            events.append(json.loads(data[6:]))
    return events


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_every_anthropic_event_is_one_the_official_sdk_types(name: str) -> None:
    with AnthropicServer() as server:
        events = sse_events(server, SCRIPTS[name])
    for event in events:
        if event["type"] == "ping":
            continue  # a keep-alive: the SDK skips it by name
        typed = sdk_events().validate_python(event)
        assert typed.type == event["type"]
        unknown = set(event) - set(type(typed).model_fields)
        assert not unknown, f"{event['type']} carries keys the SDK does not know: {unknown}"


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_the_official_sdk_rebuilds_each_scripted_message(name: str) -> None:
    import anthropic

    reply = SCRIPTS[name]
    with AnthropicServer([reply]) as server:
        client = anthropic.Anthropic(
            base_url=server.base_url.removesuffix("/v1"),
            api_key="sk-test",
            default_headers={"anthropic-version": "2023-06-01"},
            max_retries=0,
        )
        with client.messages.stream(
            model="claude-x", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            message = stream.get_final_message()
        client.close()
    texts = [b.text for b in message.content if b.type == "text"]
    calls = [(b.name, b.input) for b in message.content if b.type == "tool_use"]
    assert texts == ([reply.text] if reply.text else [])
    assert calls == [(c.name, c.arguments or {}) for c in reply.tool_calls]
    expected = "max_tokens" if reply.cut else "tool_use" if reply.tool_calls else "end_turn"
    assert message.stop_reason == expected
    assert message.usage.input_tokens == reply.input_tokens
    assert message.usage.output_tokens == reply.output_tokens


def stream_lines(server: OpenAIChatServer, body: dict[str, Any]) -> list[tuple[float, str]]:
    """Every line of a streamed reply with the seconds since the request."""
    began = time.monotonic()
    payload = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with httpx.stream(
        "POST", f"{server.base_url}/chat/completions", json={**payload, **body}, timeout=10
    ) as response:
        assert response.status_code == 200
        return [(time.monotonic() - began, line) for line in response.iter_lines() if line]


def test_the_llama_cpp_stream_has_the_real_servers_shape() -> None:
    slow = Reply(text="The port is 8000.", first_token_delay=0.3, cut=True)
    with OpenAIChatServer([slow], llama_cpp=True, ping_interval=0.05) as server:
        lines = stream_lines(server, {"stream_options": {"include_usage": True}})
    first_data = next(i for i, (_, line) in enumerate(lines) if line.startswith("data: "))
    pings = lines[:first_data]
    assert pings and all(line == ":" for _, line in pings), "comment pings while it reads"
    assert lines[first_data][0] >= 0.25, "the role chunk comes with the first token"
    chunks = [json.loads(line[6:]) for _, line in lines if line.startswith("data: {")]
    assert lines[-1][1] == "data: [DONE]"
    role, *text, finish, usage = chunks
    assert set(role) == LLAMA_CHUNK_KEYS and role["choices"][0]["delta"] == LLAMA_ROLE_DELTA
    assert all(set(c) == LLAMA_CHUNK_KEYS and "logprobs" not in c["choices"][0] for c in text)
    assert finish["choices"][0] == {"finish_reason": "length", "index": 0, "delta": {}}
    assert usage["choices"] == [] and set(usage["timings"]) == LLAMA_TIMINGS_KEYS
    assert set(usage["usage"]) == {
        "completion_tokens",
        "prompt_tokens",
        "total_tokens",
        "prompt_tokens_details",
    }


def test_the_hosted_openai_stream_sends_its_role_chunk_before_it_waits() -> None:
    slow = Reply(text="Hello.", first_token_delay=0.3)
    with OpenAIChatServer([slow]) as server:
        lines = stream_lines(server, {})
    (at, first), (later, second) = lines[0], lines[1]
    opening = json.loads(first[6:])
    assert opening["choices"][0]["delta"] == {"role": "assistant", "content": "", "refusal": None}
    assert opening["service_tier"] == "default" and opening["obfuscation"]
    assert at < 0.25 <= later and "Hello" in second


def test_llama_cpp_refusals_have_the_real_bodies() -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "word " * 400}]}
    with (
        OpenAIChatServer(llama_cpp=True, n_ctx=100) as small,
        OpenAIChatServer(llama_cpp=True, jinja=False) as no_jinja,
    ):
        overflow = httpx.post(f"{small.base_url}/chat/completions", json=body)
        refused = httpx.post(
            f"{no_jinja.base_url}/chat/completions",
            json={**body, "messages": [{"role": "user", "content": "hi"}], "tools": tools},
        )
    assert overflow.status_code == 400
    error = overflow.json()["error"]
    assert set(error) == LLAMA_OVERFLOW_KEYS and error["type"] == "exceed_context_size_error"
    assert error["message"].startswith(f"request ({error['n_prompt_tokens']} tokens) exceeds")
    assert refused.status_code == 500
    assert refused.json()["error"]["message"] == "tools param requires --jinja flag"


def test_a_script_that_breaks_the_requested_schema_is_refused() -> None:
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    spec = {"type": "json_schema", "json_schema": {"name": "a", "schema": schema}}
    with OpenAIChatServer([Reply(text="not JSON at all")], llama_cpp=True) as server:
        lines = stream_lines(server, {"response_format": spec})
    assert "breaks the response_format schema" in lines[0][1]


def test_llama_cpp_takes_what_llama_server_takes_and_refuses_in_its_shape() -> None:
    """llama-server needs no model, takes any role, a tool reply with no call before it
    and an empty tools list (the hosted API refuses all four); it refuses messages that are
    not an array, and a schema it cannot compile, with 400 and {code, message, type}."""
    lenient = {
        "stream": True,
        "tools": [],
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "tool", "tool_call_id": "x", "content": "y"},
        ],
    }
    bad_schema = {"type": "json_schema", "json_schema": {"schema": {"type": "nonsense"}}}
    with OpenAIChatServer([Reply(text="Hello.")], llama_cpp=True) as server:
        url = f"{server.base_url}/chat/completions"
        taken = httpx.post(url, json=lenient)
        not_array = httpx.post(url, json={"stream": True, "messages": "hi"})
        no_grammar = httpx.post(
            url,
            json={
                "stream": True,
                "messages": [{"role": "user", "content": "hi"}],
                "response_format": bad_schema,
            },
        )
    assert taken.status_code == 200
    for refused in (not_array, no_grammar):
        assert refused.status_code == 400
        error = refused.json()["error"]
        assert set(error) == {"code", "message", "type"}
        assert error["code"] == 400 and error["type"] == "invalid_request_error"
    assert not_array.json()["error"]["message"] == "Expected 'messages' to be an array"
    assert "JSON schema error" in no_grammar.json()["error"]["message"]
