"""Providers against local servers speaking each vendor's real streaming wire protocol."""

from __future__ import annotations

import asyncio
import base64
import logging
import socket
import time
import traceback
from collections.abc import Iterator
from typing import Any

import pytest
from docpilot_runtime.providers import (
    Message,
    ModelReply,
    ProviderError,
    ProviderSettings,
    ToolCall,
    ToolSpec,
    Usage,
    cost_micro_usd,
    make_provider,
    provider_settings,
)
from docpilot_runtime.providers.pricing import PRICES, price_row, row_cost_micro_usd
from docpilot_runtime.providers.upstream import redact_userinfo
from servers.anthropic_messages import (
    AnthropicServer,
    Fault,
    Reply,
    ScriptedServer,
    ToolUse,
    answer_reply,
    thinking_signature,
    tool_reply,
)
from servers.openai_chat import OpenAIChatServer

KEY_ENV = "DOCPILOT_TEST_PROVIDER_KEY"
SECRET = "sk-test-Zq8v3LkP0wR7nT2yXc5bH1mJ9dF4gS6a"
MODELS = {"anthropic": "claude-sonnet-5-5", "openai": "gpt-4.1-mini"}
SERVERS: dict[str, type[ScriptedServer]] = {
    "anthropic": AnthropicServer,
    "openai": OpenAIChatServer,
}
PLATFORM_RULES = "Answer only from the provided documentation. Cite every claim."
SITE_PROFILE = "Site: DocPilot docs. Audience: MkDocs users."
QUESTION = Message("user", "How do I install the plugin?")
TOOLS = (
    ToolSpec(
        "search_docs",
        "Search the documentation.",
        {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    ),
    ToolSpec(
        "answer",
        "Give the final answer.",
        {
            "type": "object",
            "properties": {
                "markdown": {"type": "string"},
                "citations": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["markdown", "citations"],
        },
    ),
)


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, SECRET)
    return SECRET


@pytest.fixture(params=["anthropic", "openai"])
def kind(request: pytest.FixtureRequest) -> str:
    value: str = request.param
    return value


def serve(kind: str, *steps: Reply | Fault, **options: Any) -> ScriptedServer:
    return SERVERS[kind](steps, **options)


def settings_for(kind: str, server: ScriptedServer, **overrides: Any) -> ProviderSettings:
    values: dict[str, Any] = {
        "kind": kind,
        "base_url": server.base_url,
        "model": MODELS[kind],
        "api_key_env": KEY_ENV,
        "timeout": 3.0,
        "connect_timeout": 1.0,
        **overrides,
    }
    return ProviderSettings(**values)


Deltas = list[tuple[str, str]]


def complete(
    settings: ProviderSettings,
    messages: tuple[Message, ...] = (QUESTION,),
    *,
    system: tuple[str, ...] = (PLATFORM_RULES, SITE_PROFILE),
    tools: tuple[ToolSpec, ...] = TOOLS,
    deltas: Deltas | None = None,
) -> ModelReply:
    """One provider call, the provider closed afterwards; deltas are appended to `deltas`."""

    async def on_delta(kind: str, text: str) -> None:
        if deltas is not None:
            deltas.append((kind, text))

    async def run() -> ModelReply:
        provider = make_provider(settings)
        try:
            return await provider.complete(system, messages, tools, on_delta=on_delta)
        finally:
            await provider.aclose()

    return asyncio.run(run())


def failure(settings: ProviderSettings, deltas: Deltas | None = None) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        complete(settings, deltas=deltas)
    return caught.value


# --- streaming text and tool calls -----------------------------------------------------------


def test_text_streams_to_on_delta_in_several_chunks_in_order(kind: str) -> None:
    text = "Install it with `pip install mkdocs-docpilot`, then add `docpilot` to plugins."
    deltas: Deltas = []
    with serve(kind, Reply(text=text)) as server:
        reply = complete(settings_for(kind, server), deltas=deltas)
    assert len(deltas) >= 5
    assert {k for k, _ in deltas} == {"text"}
    assert "".join(piece for _, piece in deltas) == text
    assert reply.text == text
    assert reply.tool_calls == ()
    assert reply.stop_reason == "end_turn"
    assert reply.model == MODELS[kind]


def test_tool_call_json_streams_in_pieces_and_is_reassembled(kind: str) -> None:
    arguments = {
        "markdown": 'Run `pip install mkdocs-docpilot` [1].\n\n"Quoted", ünïcode ✓',
        "citations": ["install#pip", "config#plugins"],
        "confidence": 0.8,
    }
    deltas: Deltas = []
    with serve(kind, answer_reply(**arguments)) as server:
        reply = complete(settings_for(kind, server), deltas=deltas)
    (call,) = reply.tool_calls
    assert call.name == "answer"
    assert call.arguments == arguments
    assert call.id
    tool_pieces = [piece for k, piece in deltas if k == "tool:answer"]
    assert len(tool_pieces) >= 5
    assert "".join(tool_pieces) == call.raw_arguments
    assert reply.stop_reason == "tool_use"


def test_text_then_two_tool_calls_keep_their_order(kind: str) -> None:
    step = Reply(
        text="Let me look that up.",
        tool_calls=(
            ToolUse("search_docs", {"query": "install"}),
            ToolUse("search_docs", {"query": "configure"}),
        ),
    )
    deltas: Deltas = []
    with serve(kind, step) as server:
        reply = complete(settings_for(kind, server), deltas=deltas)
    assert reply.text == "Let me look that up."
    assert [c.arguments for c in reply.tool_calls] == [{"query": "install"}, {"query": "configure"}]
    assert len({c.id for c in reply.tool_calls}) == 2
    kinds = [k for k, _ in deltas]
    assert kinds.index("tool:search_docs") > max(i for i, k in enumerate(kinds) if k == "text")


@pytest.mark.parametrize(
    "raw", ['{"markdown": "cut off', '["not", "an", "object"]', "{'single': 1}"]
)
def test_malformed_tool_arguments_give_none_and_keep_the_raw_text(kind: str, raw: str) -> None:
    with serve(kind, Reply(tool_calls=(ToolUse("answer", raw=raw),))) as server:
        reply = complete(settings_for(kind, server))
    (call,) = reply.tool_calls
    assert call.arguments is None
    assert call.raw_arguments == raw


def test_a_call_without_arguments_parses_to_an_empty_object(kind: str) -> None:
    with serve(kind, Reply(tool_calls=(ToolUse("list_pages", raw=""),))) as server:
        reply = complete(settings_for(kind, server))
    assert reply.tool_calls[0].arguments == {}


def test_usage_maps_input_output_and_cache_counters(kind: str) -> None:
    cache_write = 300 if kind == "anthropic" else 0  # OpenAI does not report cache writes
    step = Reply(
        text="ok",
        input_tokens=50,
        output_tokens=7,
        cache_read_tokens=900,
        cache_write_tokens=cache_write,
    )
    with serve(kind, step) as server:
        reply = complete(settings_for(kind, server))
    assert reply.usage == Usage(
        input_tokens=50, output_tokens=7, cache_read_tokens=900, cache_write_tokens=cache_write
    )
    assert reply.usage.prompt_tokens == 950 + cache_write


def test_usage_adds_up_across_steps() -> None:
    total = Usage(10, 2, 100, 5) + Usage(1, 1, 1, 1)
    assert total == Usage(11, 3, 101, 6)


@pytest.mark.parametrize(
    ("vendor_reason", "kind"), [("max_tokens", "anthropic"), ("length", "openai")]
)
def test_running_out_of_tokens_is_one_stop_reason_on_both(vendor_reason: str, kind: str) -> None:
    with serve(kind, Reply(text="Half an answer", stop_reason=vendor_reason)) as server:
        reply = complete(settings_for(kind, server))
    assert reply.stop_reason == "max_tokens"


def test_a_local_server_that_says_stop_after_a_tool_call_still_means_tool_use() -> None:
    step = tool_reply("search_docs", {"query": "x"}, stop_reason="stop")
    with serve("openai", step) as server:
        reply = complete(settings_for("openai", server))
    assert reply.stop_reason == "tool_use"


# --- what goes on the wire -------------------------------------------------------------------


def test_anthropic_marks_only_the_last_system_block_for_caching() -> None:
    with serve("anthropic", Reply(text="ok")) as server:
        complete(settings_for("anthropic", server))
    (request,) = server.requests
    body = request.body
    assert body["system"] == [
        {"type": "text", "text": PLATFORM_RULES},
        {"type": "text", "text": SITE_PROFILE, "cache_control": {"type": "ephemeral"}},
    ]
    assert "cache_control" not in str(body["messages"]) + str(body["tools"])
    assert body["messages"] == [{"role": "user", "content": QUESTION.content}]
    assert body["tools"][0] == {
        "name": "search_docs",
        "description": "Search the documentation.",
        "input_schema": TOOLS[0].parameters,
    }
    assert body["tool_choice"] == {"type": "auto"}
    assert body["stream"] is True
    assert body["model"] == MODELS["anthropic"]
    assert body["max_tokens"] == 1500
    assert request.headers["x-api-key"] == SECRET
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert request.headers["content-type"] == "application/json"
    assert "authorization" not in request.headers


def test_openai_sends_one_system_message_function_tools_and_a_bearer_key() -> None:
    with serve("openai", Reply(text="ok")) as server:
        complete(settings_for("openai", server))
    (request,) = server.requests
    body = request.body
    assert body["messages"] == [
        {"role": "system", "content": f"{PLATFORM_RULES}\n\n{SITE_PROFILE}"},
        {"role": "user", "content": QUESTION.content},
    ]
    assert body["tools"][1] == {
        "type": "function",
        "function": {
            "name": "answer",
            "description": "Give the final answer.",
            "parameters": TOOLS[1].parameters,
        },
    }
    assert body["tool_choice"] == "auto"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 1500
    assert request.headers["authorization"] == f"Bearer {SECRET}"


def test_a_local_server_without_a_key_gets_no_authorization_header() -> None:
    with serve("openai", Reply(text="ok")) as server:
        complete(settings_for("openai", server, api_key_env="", model="llama3.1:8b"))
    assert "authorization" not in server.requests[0].headers
    assert server.requests[0].body["max_tokens"] == 1500


def test_openai_reasoning_models_get_max_completion_tokens() -> None:
    with serve("openai", Reply(text="ok")) as server:
        complete(settings_for("openai", server, model="o4-mini", max_tokens=900))
    body = server.requests[0].body
    assert body["max_completion_tokens"] == 900
    assert "max_tokens" not in body


@pytest.mark.parametrize(
    ("kind", "field", "sent"),
    [("anthropic", "output_config", {"effort": "low"}), ("openai", "reasoning_effort", "low")],
)
def test_effort_is_sent_in_each_vendors_field(kind: str, field: str, sent: object) -> None:
    with serve(kind, Reply(text="ok"), Reply(text="ok")) as server:
        complete(settings_for(kind, server, effort="low"))
        complete(settings_for(kind, server))
    assert server.requests[0].body[field] == sent
    assert field not in server.requests[1].body


def test_no_system_and_no_tools_leave_those_fields_out(kind: str) -> None:
    with serve(kind, Reply(text="ok")) as server:
        complete(settings_for(kind, server), system=(), tools=())
    body = server.requests[0].body
    assert "system" not in body
    assert "tools" not in body
    assert "tool_choice" not in body
    assert body["messages"][0]["role"] == "user"


def _two_tool_calls() -> Message:
    return Message(
        "assistant",
        "Searching twice.",
        tool_calls=(
            ToolCall("call_a", "search_docs", {"query": "install"}, '{"query": "install"}'),
            ToolCall("call_b", "search_docs", {"query": "config"}, '{"query":"config"}'),
        ),
    )


def test_anthropic_merges_consecutive_tool_results_into_one_user_message() -> None:
    conversation = (
        QUESTION,
        _two_tool_calls(),
        Message("tool", "Install: pip install mkdocs-docpilot", tool_call_id="call_a"),
        Message("tool", "Config: add docpilot to plugins", tool_call_id="call_b"),
    )
    with serve("anthropic", Reply(text="ok")) as server:
        complete(settings_for("anthropic", server), conversation)
    assert server.requests[0].body["messages"] == [
        {"role": "user", "content": QUESTION.content},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Searching twice."},
                {
                    "type": "tool_use",
                    "id": "call_a",
                    "name": "search_docs",
                    "input": {"query": "install"},
                },
                {
                    "type": "tool_use",
                    "id": "call_b",
                    "name": "search_docs",
                    "input": {"query": "config"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "call_a",
                    "content": "Install: pip install mkdocs-docpilot",
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "call_b",
                    "content": "Config: add docpilot to plugins",
                },
            ],
        },
    ]


def test_openai_sends_tool_results_as_tool_messages_and_arguments_as_sent() -> None:
    conversation = (
        QUESTION,
        _two_tool_calls(),
        Message("tool", "Install: pip install mkdocs-docpilot", tool_call_id="call_a"),
        Message("tool", "Config: add docpilot to plugins", tool_call_id="call_b"),
    )
    with serve("openai", Reply(text="ok")) as server:
        complete(settings_for("openai", server), conversation)
    assert server.requests[0].body["messages"][1:] == [
        {"role": "user", "content": QUESTION.content},
        {
            "role": "assistant",
            "content": "Searching twice.",
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "search_docs", "arguments": '{"query": "install"}'},
                },
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "search_docs", "arguments": '{"query":"config"}'},
                },
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_a",
            "content": "Install: pip install mkdocs-docpilot",
        },
        {"role": "tool", "tool_call_id": "call_b", "content": "Config: add docpilot to plugins"},
    ]


def test_each_steps_prompt_is_a_prefix_of_the_next(kind: str) -> None:
    first = Reply(
        text="Checking.",
        tool_calls=(ToolUse("search_docs", {"query": "install"}),),
        thinking="The install page should say." if kind == "anthropic" else "",
    )
    second = answer_reply(markdown="Use pip [1].", citations=["install#pip"])
    with serve(kind, first, second) as server:
        settings = settings_for(kind, server)
        reply = complete(settings, (QUESTION,))
        observation = Message(
            "tool", "install#pip: pip install ...", tool_call_id=reply.tool_calls[0].id
        )
        final = complete(settings, (QUESTION, reply.to_message(), observation))
    assert final.tool_calls[0].arguments == {
        "markdown": "Use pip [1].",
        "citations": ["install#pip"],
    }
    before, after = server.bodies
    assert after["messages"][: len(before["messages"])] == before["messages"]
    for key in ("system", "tools", "model"):
        assert after.get(key) == before.get(key)
    if kind == "anthropic":
        # The thinking block goes back exactly as it came, signature and all.
        echoed = after["messages"][1]["content"]
        assert echoed[0] == {
            "type": "thinking",
            "thinking": "The install page should say.",
            "signature": thinking_signature(1),
        }
        assert [block["type"] for block in echoed] == ["thinking", "text", "tool_use"]


# --- failures the ladder moves on from -------------------------------------------------------


def test_a_500_is_retried_once_then_succeeds(kind: str) -> None:
    with serve(kind, Fault("status", status=500), Reply(text="second time")) as server:
        reply = complete(settings_for(kind, server))
    assert reply.text == "second time"
    assert len(server.requests) == 2


def test_a_429_is_retried_after_the_wait_the_server_asks(kind: str) -> None:
    with serve(kind, Fault("status", status=429, retry_after="0"), Reply(text="ok")) as server:
        reply = complete(settings_for(kind, server))
    assert reply.text == "ok"
    assert len(server.requests) == 2


def test_a_429_asking_for_a_long_wait_moves_on_at_once(kind: str) -> None:
    with serve(kind, Fault("status", status=429, retry_after="30"), Reply(text="ok")) as server:
        started = time.monotonic()
        error = failure(settings_for(kind, server))
    assert time.monotonic() - started < 2.0
    assert (error.kind, error.status, error.retryable) == ("status", 429, True)
    assert len(server.requests) == 1


def test_persistent_500s_give_up_after_the_configured_retries(kind: str) -> None:
    steps = [Fault("status", status=503)] * 3
    with serve(kind, *steps, Reply(text="too late")) as server:
        error = failure(settings_for(kind, server, retries=1))
    assert (error.kind, error.status) == ("status", 503)
    assert len(server.requests) == 2


def test_no_retries_means_one_try(kind: str) -> None:
    with serve(kind, Fault("status", status=500), Reply(text="ok")) as server:
        failure(settings_for(kind, server, retries=0))
    assert len(server.requests) == 1


def test_a_400_is_not_retried_and_names_the_status(kind: str) -> None:
    with serve(kind, Fault("status", status=400), Reply(text="ok")) as server:
        error = failure(settings_for(kind, server))
    assert (error.kind, error.status, error.retryable) == ("status", 400, False)
    assert "HTTP 400" in str(error)
    assert "scripted failure" in str(error)  # the vendor's own message is quoted
    assert MODELS[kind] in str(error)
    assert len(server.requests) == 1


def test_a_request_the_api_would_refuse_is_a_400_naming_why() -> None:
    # A tool result that answers no tool use: the server checks like the real API does.
    orphan = (QUESTION, Message("tool", "stray", tool_call_id="toolu_x"))
    with (
        serve("anthropic", Reply(text="ok")) as server,
        pytest.raises(ProviderError, match=r"HTTP 400.*tool_use_id"),
    ):
        complete(settings_for("anthropic", server), orphan)


def test_a_stalled_server_times_out_within_the_deadline(kind: str) -> None:
    with serve(kind, Fault("stall"), Reply(text="too late")) as server:
        started = time.monotonic()
        error = failure(settings_for(kind, server, timeout=0.5))
        elapsed = time.monotonic() - started
    assert error.kind == "timeout"
    assert "timeout" in str(error)
    assert 0.4 < elapsed < 1.5  # one try: a timeout is left to the ladder, not retried
    assert len(server.requests) == 1


def test_a_stall_after_the_answer_began_is_a_timeout_not_a_retry(kind: str) -> None:
    deltas: Deltas = []
    with serve(kind, Fault("stall_mid_stream"), Reply(text="too late")) as server:
        error = failure(settings_for(kind, server, timeout=0.5), deltas)
    assert error.kind == "timeout"
    assert "".join(piece for _, piece in deltas) == "Partial answer that never finishes"
    assert len(server.requests) == 1


def test_a_malformed_stream_raises_and_is_not_retried(kind: str) -> None:
    with serve(kind, Fault("malformed"), Reply(text="ok")) as server:
        error = failure(settings_for(kind, server))
    assert error.kind == "malformed"
    assert "not JSON" in str(error)
    assert len(server.requests) == 1


def test_a_stream_that_ends_without_its_closing_events_is_malformed(kind: str) -> None:
    with serve(kind, Fault("truncated"), Reply(text="ok")) as server:
        error = failure(settings_for(kind, server))
    assert error.kind == "malformed"
    assert ("message_stop" if kind == "anthropic" else "[DONE]") in str(error)


def test_a_connection_dropped_mid_answer_is_an_error_not_a_retry(kind: str) -> None:
    deltas: Deltas = []
    with serve(kind, Fault("drop"), Reply(text="ok")) as server:
        error = failure(settings_for(kind, server), deltas)
    assert error.kind == "connection"
    assert deltas  # the reader already saw part of it: a retry would repeat it
    assert len(server.requests) == 1


def test_a_connection_dropped_before_any_answer_is_retried(kind: str) -> None:
    with serve(kind, Fault("drop", partial_text=""), Reply(text="ok")) as server:
        reply = complete(settings_for(kind, server))
    assert reply.text == "ok"
    assert len(server.requests) == 2


def test_an_overloaded_event_before_the_answer_is_retried(kind: str) -> None:
    with serve(kind, Fault("stream_error"), Reply(text="ok")) as server:
        reply = complete(settings_for(kind, server))
    assert reply.text == "ok"
    assert len(server.requests) == 2


def test_a_failed_call_reports_the_usage_it_had_already_incurred() -> None:
    with serve("anthropic", Fault("drop")) as server:
        error = failure(settings_for("anthropic", server))
    assert error.usage.input_tokens == 120  # from message_start, before the drop


@pytest.fixture
def closed_port_url() -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    yield f"http://127.0.0.1:{port}"


def test_an_unreachable_endpoint_is_a_connection_error_naming_base_url(
    kind: str, closed_port_url: str
) -> None:
    settings = ProviderSettings(kind, closed_port_url, MODELS[kind], KEY_ENV, timeout=0.5)
    error = failure(settings)
    assert error.kind == "connection"
    assert closed_port_url in str(error)
    assert "base_url" in str(error)
    # httpx's exception (its request holds the key header) is not chained on.
    assert error.__cause__ is None and error.__context__ is None
    assert SECRET not in "".join(traceback.format_exception(error))


# --- keys ------------------------------------------------------------------------------------


def test_a_missing_key_variable_is_named(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(ProviderError, match=KEY_ENV) as caught:
        make_provider(ProviderSettings(kind, "http://127.0.0.1:9", MODELS[kind], KEY_ENV))
    assert caught.value.kind == "config"


def test_the_key_never_appears_in_errors_tracebacks_or_repr(kind: str) -> None:
    # The server refuses the key and echoes it back, as real APIs partly do.
    with serve(kind, Reply(text="ok"), api_key="a-different-key") as server:
        settings = settings_for(kind, server)
        error = failure(settings)
        provider = make_provider(settings)
        shown = repr(provider) + str(provider)
        asyncio.run(provider.aclose())
    assert error.status == 401
    assert KEY_ENV in str(error)  # names where the key came from, never the key
    everything = str(error) + repr(error) + "".join(traceback.format_exception(error)) + shown
    assert SECRET not in everything
    assert error.__cause__ is None and error.__context__ is None


def test_an_error_body_quoting_the_key_is_scrubbed(kind: str) -> None:
    quoted = Fault("status", status=400, message=f"invalid request from key {SECRET}")
    with serve(kind, quoted) as server:
        error = failure(settings_for(kind, server))
    assert "invalid request from key ***" in str(error)
    assert SECRET not in str(error)


# --- settings --------------------------------------------------------------------------------


def test_a_minimal_providers_table_gets_the_vendor_endpoint_and_defaults() -> None:
    settings = provider_settings(
        {"kind": "anthropic", "model": "claude-opus-5-5"}, "cfg.toml [[providers]] 1"
    )
    assert settings == ProviderSettings(
        kind="anthropic", base_url="https://api.anthropic.com", model="claude-opus-5-5"
    )
    assert settings.name == "anthropic:claude-opus-5-5"
    local = provider_settings(
        {
            "kind": "openai",
            "base_url": "http://localhost:11434/v1",
            "model": "llama3.1:8b",
            "timeout": 60,
        },
        "cfg.toml [[providers]] 2",
    )
    assert (local.api_key_env, local.timeout, local.retries) == ("", 60.0, 1)


@pytest.mark.parametrize(
    ("table", "named"),
    [
        ({"kind": "openai", "model": "gpt-4o", "modle": "x"}, "modle"),
        ({"kind": "gemini", "model": "g"}, "kind"),
        ({"kind": "openai"}, "model"),
        ({"kind": "openai", "model": "gpt-4o", "base_url": "api.openai.com"}, "base_url"),
        ({"kind": "openai", "model": "gpt-4o", "timeout": 0}, "timeout"),
        ({"kind": "openai", "model": "gpt-4o", "timeout": True}, "timeout"),
        ({"kind": "openai", "model": "gpt-4o", "connect_timeout": -1}, "connect_timeout"),
        ({"kind": "openai", "model": "gpt-4o", "max_tokens": 0}, "max_tokens"),
        ({"kind": "openai", "model": "gpt-4o", "retries": 9}, "retries"),
        ({"kind": "openai", "model": "gpt-4o", "effort": "extreme"}, "effort"),
    ],
)
def test_a_bad_providers_table_names_where_and_the_key(table: dict[str, Any], named: str) -> None:
    with pytest.raises(ValueError, match=rf"settings\.toml \[\[providers\]\] 3.*{named}"):
        provider_settings(table, "settings.toml [[providers]] 3")


def test_a_key_in_the_settings_file_is_refused_without_repeating_it() -> None:
    with pytest.raises(ValueError, match="api_key_env") as caught:
        provider_settings({"kind": "openai", "model": "gpt-4o", "api_key": SECRET}, "s.toml")
    assert SECRET not in str(caught.value)
    with pytest.raises(ValueError, match="api_key_env") as caught:
        provider_settings({"kind": "openai", "model": "gpt-4o", "api_key_env": SECRET}, "s.toml")
    assert SECRET not in str(caught.value)


# --- pricing ---------------------------------------------------------------------------------


def test_costs_match_the_vendors_arithmetic() -> None:
    turn = Usage(input_tokens=3000, output_tokens=300)
    assert cost_micro_usd("claude-opus-5-5", turn) == 18_000  # 3000 x $4 + 300 x $20 per MTok
    assert cost_micro_usd("claude-haiku-5-5", turn) == 450
    assert cost_micro_usd("gpt-4o-mini", turn) == 630  # 3000 x 0.15 + 300 x 0.60


def test_anthropic_cache_writes_cost_a_quarter_more_than_input_and_reads_less() -> None:
    writes = cost_micro_usd("claude-sonnet-4-5", Usage(cache_write_tokens=1_000_000))
    reads = cost_micro_usd("claude-sonnet-4-5", Usage(cache_read_tokens=1_000_000))
    uncached = cost_micro_usd("claude-sonnet-4-5", Usage(input_tokens=1_000_000))
    assert (uncached, writes, reads) == (3_000_000, 3_750_000, 300_000)


def test_openai_cached_input_is_cheaper_and_writes_cost_nothing_extra() -> None:
    assert cost_micro_usd("gpt-4.1", Usage(cache_read_tokens=1_000_000)) == 500_000
    assert cost_micro_usd("gpt-4.1", Usage(cache_write_tokens=1_000_000)) == 2_000_000


@pytest.mark.parametrize(
    ("model", "listed_as"),
    [
        ("claude-sonnet-4-20250514", "claude-sonnet-4"),
        ("claude-haiku-4-5-20251001", "claude-haiku-4-5"),
        ("claude-opus-5-5[1m]", "claude-opus-5-5"),
        ("anthropic/claude-sonnet-4.5", "claude-sonnet-4-5"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("openai/gpt-4o-mini", "gpt-4o-mini"),
        ("GPT-4.1-mini-2025-04-14", "gpt-4.1-mini"),
        ("o3-mini-2025-01-31", "o3-mini"),
    ],
)
def test_snapshots_aliases_and_router_names_find_their_row(model: str, listed_as: str) -> None:
    assert price_row(model) is price_row(listed_as) is not None


def test_an_older_snapshot_with_its_own_price_is_not_priced_as_the_family() -> None:
    usage = Usage(input_tokens=1000, output_tokens=1000)
    assert cost_micro_usd("gpt-4o-2024-05-13", usage) == 20_000
    assert cost_micro_usd("gpt-4o-2024-11-20", usage) == 12_500


@pytest.mark.parametrize("variant", ["gpt-5-pro", "o3-pro", "claude-opus-5-6", "gpt-4.1-turbo"])
def test_a_variant_never_inherits_its_familys_price(variant: str) -> None:
    assert price_row(variant) is None


@pytest.mark.parametrize(
    "usage",
    [
        Usage(input_tokens=1000, output_tokens=1000),
        Usage(input_tokens=100_000),
        Usage(cache_read_tokens=1_000_000, output_tokens=10),
        Usage(cache_write_tokens=5000),
    ],
)
def test_an_unknown_model_is_priced_at_the_most_expensive_row(usage: Usage) -> None:
    cost = cost_micro_usd("llama3.1:8b", usage)
    assert cost == max(row_cost_micro_usd(row, usage) for row in PRICES)
    assert all(cost >= cost_micro_usd(row.names[0], usage) for row in PRICES)


def test_the_top_row_for_an_ordinary_turn_is_the_old_opus_rate() -> None:
    turn = Usage(input_tokens=1000, output_tokens=1000)
    assert (
        cost_micro_usd("some-new-model", turn) == cost_micro_usd("claude-opus-4-1", turn) == 90_000
    )


def test_haiku_5_5_prompts_over_100k_tokens_pay_the_long_prompt_rate() -> None:
    short = Usage(input_tokens=90_000, cache_read_tokens=10_000, output_tokens=1000)
    long = Usage(input_tokens=90_000, cache_read_tokens=10_001, output_tokens=1000)
    assert cost_micro_usd("claude-haiku-5-5", short) == 9000 + 100 + 500
    assert cost_micro_usd("claude-haiku-5-5", long) == 45_000 + 501 + 2500  # 500.05 rounds up


def test_fractions_of_a_micro_dollar_round_up() -> None:
    assert cost_micro_usd("gpt-5-nano", Usage(input_tokens=1)) == 1
    assert cost_micro_usd("gpt-5-nano", Usage()) == 0


USERINFO_PASSWORD = "pw-Hq7dK2mX9vL4"


def userinfo_url(base_url: str) -> str:
    return base_url.replace("http://", f"http://router-user:{USERINFO_PASSWORD}@", 1)


def test_base_url_userinfo_goes_as_basic_auth_and_never_into_a_log_record(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # the root logger: httpx, httpcore and ours
    with serve(kind, Reply(text="ok")) as server:
        settings = settings_for(kind, server, base_url=userinfo_url(server.base_url))
        assert complete(settings).text == "ok"
        assert USERINFO_PASSWORD not in repr(make_provider(settings))
    expected = base64.b64encode(f"router-user:{USERINFO_PASSWORD}".encode()).decode()
    # Anthropic's key travels in x-api-key, so the userinfo is sent as basic auth;
    # OpenAI's travels in Authorization, where a configured key wins.
    wanted = f"Basic {expected}" if kind == "anthropic" else f"Bearer {SECRET}"
    assert server.requests[0].headers["authorization"] == wanted
    assert any(record.name == "httpx" for record in caplog.records)  # the URL was logged
    logged = "\n".join(f"{r.name} {r.getMessage()}" for r in caplog.records)
    assert USERINFO_PASSWORD not in logged
    assert "router-user" not in logged


def test_an_unreachable_userinfo_url_is_named_without_its_password(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = userinfo_url(f"http://127.0.0.1:{port}")
    settings = ProviderSettings(kind=kind, base_url=url, model=MODELS[kind], retries=0)
    with pytest.raises(ProviderError) as caught:
        complete(settings)
    assert caught.value.kind == "connection" and f"127.0.0.1:{port}" in str(caught.value)
    text = "\n".join(
        [str(caught.value), *traceback.format_exception(caught.value)]
        + [r.getMessage() for r in caplog.records]
    )
    assert USERINFO_PASSWORD not in text


def test_redact_userinfo_hides_every_credential_part_of_a_url() -> None:
    text = "to https://u:p%40ss@host/v1 and http://token@h2:8080/x, not mailto a@b"
    assert (
        redact_userinfo(text) == "to https://***@host/v1 and http://***@h2:8080/x, not mailto a@b"
    )
