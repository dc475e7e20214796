"""The HTTP API over real HTTP: uvicorn on a loopback port serving example-site, an httpx
client, both the SSE stream and plain JSON, the 4xx errors, feedback, CORS and the static
site. A second app answers a few questions on the Material for MkDocs corpus."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import random
import string
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx
import pytest
from docpilot_runtime.serve import ask as serve_ask
from docpilot_runtime.serve.app import build_app, create_app
from docpilot_runtime.shared.types import AskRequest, Result
from docpilot_runtime.turn import Event, EventSink, Runtime
from servers.runtime import ALLOWED_ORIGIN, RunningServer, serve_app
from servers.runtime import example_server as example_server  # session fixture

COVERED = "How do I exclude a page from the assistant?"
OFF_TOPIC = "What is the best recipe for sourdough bread?"
SOCIAL = "hello"


def _aws_pair(seed: int) -> tuple[str, str]:
    """An AWS-style access key id and secret that no vendor published (seeded, so a
    failure reproduces)."""
    rng = random.Random(seed)
    key_id = "AKIA" + "".join(rng.choices(string.ascii_uppercase + string.digits, k=16))
    secret = "".join(rng.choices(string.ascii_letters + string.digits + "+/", k=40))
    return key_id, secret


KEY_ID, SECRET = _aws_pair(2024)
CREDENTIAL = (
    f"My deploy fails with aws_access_key_id = {KEY_ID} and "
    f"aws_secret_access_key = {SECRET}, what is wrong?"
)

QUESTIONS = {"covered": COVERED, "off_topic": OFF_TOPIC, "social": SOCIAL, "credential": CREDENTIAL}


# ---------------------------------------------------------------------- helpers


@dataclasses.dataclass
class Stream:
    status: int
    headers: httpx.Headers
    events: list[tuple[str, dict[str, Any]]]

    def names(self) -> list[str]:
        return [name for name, _ in self.events]

    def answer(self) -> dict[str, Any]:
        answers = [data for name, data in self.events if name == "answer"]
        assert len(answers) == 1, self.names()
        return answers[0]


def parse_sse(text: str) -> list[tuple[str, dict[str, Any]]]:
    """Blocks separated by a blank line, each ``event: NAME`` + one ``data: JSON`` line."""
    events = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((fields["event"], json.loads(fields["data"])))
    return events


def ask_stream(client: httpx.Client, body: dict[str, Any]) -> Stream:
    headers = {"Accept": "text/event-stream"}
    with client.stream("POST", "/api/ask", json=body, headers=headers) as response:
        text = "".join(response.iter_text())
    return Stream(response.status_code, response.headers, parse_sse(text))


def ask_json(client: httpx.Client, body: dict[str, Any]) -> httpx.Response:
    return client.post("/api/ask", json=body)


def ask(client: httpx.Client, question: str, mode: str) -> dict[str, Any]:
    """The result object for ``question``, through the stream or as plain JSON."""
    if mode == "sse":
        stream = ask_stream(client, {"question": question})
        assert stream.status == 200
        return stream.answer()
    response = ask_json(client, {"question": question})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    return response.json()  # type: ignore[no-any-return]


def assert_page_exists(client: httpx.Client, url: str) -> None:
    """The citation's page is served, and its anchor is an id in that page's HTML."""
    parts = urlsplit(urljoin("/", url))
    page = client.get(parts.path)
    assert page.status_code == 200, url
    assert "text/html" in page.headers["content-type"]
    if parts.fragment:
        assert f'id="{parts.fragment}"' in page.text, url


@pytest.fixture(scope="session")
def client(example_server: RunningServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=example_server.base_url, timeout=60) as http:
        yield http


@pytest.fixture(scope="session")
def health(client: httpx.Client) -> dict[str, Any]:
    response = client.get("/api/health")
    assert response.status_code == 200
    return response.json()  # type: ignore[no-any-return]


MODES = ["json", "sse"]


# ---------------------------------------------------------------------- the four kinds


@pytest.mark.parametrize("mode", MODES)
def test_covered_question_gets_passages_citing_sections_that_exist(
    client: httpx.Client, mode: str
) -> None:
    result = ask(client, COVERED, mode)
    assert result["kind"] in ("passages", "answer")
    assert result["citations"], result
    assert 0 <= result["confidence"] <= 100
    assert result["retriever"] in ("hybrid", "lexical")
    assert len(result["ranked"]) >= 10
    for citation in result["citations"]:
        assert f"[{citation['n']}]" in result["markdown"]
        assert_page_exists(client, citation["url"])


@pytest.mark.parametrize("mode", MODES)
def test_off_topic_question_is_refused_with_closest_pages(client: httpx.Client, mode: str) -> None:
    result = ask(client, OFF_TOPIC, mode)
    assert result["kind"] == "refusal"
    assert result["citations"] == []
    assert 3 <= len(result["closest"]) <= 5
    assert len({page["url"] for page in result["closest"]}) == len(result["closest"])
    assert isinstance(result["confidence"], int)
    for page in result["closest"]:
        assert_page_exists(client, page["url"])


@pytest.mark.parametrize("mode", MODES)
def test_hello_is_a_social_reply_without_confidence(client: httpx.Client, mode: str) -> None:
    result = ask(client, SOCIAL, mode)
    assert result["kind"] == "social"
    assert result["confidence"] is None
    assert result["citations"] == [] and result["ranked"] == []


@pytest.mark.parametrize("mode", MODES)
def test_pasted_aws_key_gets_a_credential_warning_and_is_not_echoed(
    client: httpx.Client, mode: str
) -> None:
    if mode == "sse":
        stream = ask_stream(client, {"question": CREDENTIAL})
        result, raw, headers = stream.answer(), json.dumps(stream.events), stream.headers
    else:
        response = ask_json(client, {"question": CREDENTIAL})
        result, raw, headers = response.json(), response.text, response.headers
    assert result["kind"] == "credential"
    assert result["credential_kind"]
    assert result["confidence"] is None
    assert result["ranked"] == [] and result["citations"] == []
    for secret in (KEY_ID, SECRET):
        assert secret not in raw
        assert all(secret not in value for value in headers.values())


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(QUESTIONS))
def test_every_result_carries_turn_id_and_the_loaded_bundle_hash(
    client: httpx.Client, health: dict[str, Any], name: str, mode: str
) -> None:
    result = ask(client, QUESTIONS[name], mode)
    assert result["turn_id"]
    assert result["bundle_hash"] == health["bundle_hash"]
    assert set(result) >= {
        "turn_id", "kind", "markdown", "citations", "closest", "tentative", "confidence",
        "model_confidence", "retriever", "rescued", "ranked", "actions", "summary",
        "credential_kind", "bundle_hash", "usage",
    }


def test_turn_ids_are_unique(client: httpx.Client) -> None:
    ids = {ask(client, SOCIAL, "json")["turn_id"] for _ in range(5)}
    assert len(ids) == 5


# ---------------------------------------------------------------------- the stream


@pytest.mark.parametrize("name", ["covered", "off_topic"])
def test_stream_sends_progress_before_the_answer_and_ends_with_it(
    client: httpx.Client, name: str
) -> None:
    stream = ask_stream(client, {"question": QUESTIONS[name]})
    names = stream.names()
    assert "progress" in names
    assert names.index("progress") < names.index("answer")
    assert names[-1] == "answer" and names.count("answer") == 1
    progress = next(data for event, data in stream.events if event == "progress")
    assert progress["stage"] and progress["message"]


@pytest.mark.parametrize("name", ["social", "credential"])
def test_stream_of_a_template_reply_is_one_answer_event(client: httpx.Client, name: str) -> None:
    assert ask_stream(client, {"question": QUESTIONS[name]}).names() == ["answer"]


def test_stream_headers_disable_caching_and_proxy_buffering(client: httpx.Client) -> None:
    stream = ask_stream(client, {"question": COVERED})
    assert stream.headers["content-type"].startswith("text/event-stream")
    assert stream.headers["cache-control"] == "no-store"
    assert stream.headers["x-accel-buffering"] == "no"


def test_without_an_event_stream_accept_the_reply_is_plain_json(client: httpx.Client) -> None:
    response = client.post("/api/ask", json={"question": COVERED}, headers={"Accept": "*/*"})
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["kind"] in ("passages", "answer")


class GatedRuntime(Runtime):
    """A runtime that emits `progress`, then holds the turn until the test releases it
    (or 10 s pass), then answers for real; it notes how the wait ended."""

    released: threading.Event
    outcomes: list[str]

    async def ask(self, request: AskRequest, emit: EventSink | None = None) -> Result:
        assert emit is not None
        await emit(Event("progress", {"stage": "retrieval", "message": "Searching"}))
        deadline = time.monotonic() + 10
        try:
            while not self.released.is_set() and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
        except asyncio.CancelledError:
            self.outcomes.append("cancelled")
            raise
        self.outcomes.append("released" if self.released.is_set() else "timed out")
        return await super().ask(request, emit)


@pytest.fixture
def gated(example_server: RunningServer, example_site: Path) -> Iterator[tuple[GatedRuntime, httpx.Client]]:
    runtime: Runtime = example_server.app.state.runtime  # type: ignore[attr-defined]
    held = GatedRuntime(sites=runtime.sites, settings=runtime.settings)
    held.released, held.outcomes = threading.Event(), []
    with (
        serve_app(build_app(held, example_site)) as running,
        httpx.Client(base_url=running.base_url, timeout=60) as http,
    ):
        yield held, http


def _stream_lines(http: httpx.Client) -> Any:
    return http.stream(
        "POST", "/api/ask", json={"question": COVERED}, headers={"Accept": "text/event-stream"}
    )


def test_progress_reaches_the_client_while_the_turn_is_still_running(
    gated: tuple[GatedRuntime, httpx.Client],
) -> None:
    runtime, http = gated
    seen = []
    with _stream_lines(http) as response:
        for line in response.iter_lines():
            if line.startswith("event: "):
                seen.append(line.removeprefix("event: "))
                if seen[-1] == "progress":
                    runtime.released.set()  # only a progress event that arrived can do this
    assert runtime.outcomes == ["released"]
    assert seen[0] == "progress" and seen[-1] == "answer"


def test_a_silent_turn_keeps_its_stream_alive_with_comments(
    gated: tuple[GatedRuntime, httpx.Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the turn is silent (a CPU model reading its prompt), comment lines keep the
    widget (which gives up after 60 s of silence) and proxies from closing the stream."""
    runtime, http = gated
    monkeypatch.setattr(serve_ask, "KEEPALIVE_SECONDS", 0.2)
    lines = []
    with _stream_lines(http) as response:
        for line in response.iter_lines():
            lines.append(line)
            if line == ": keep-alive":
                runtime.released.set()  # only a comment sent in the silence can do this
    assert runtime.outcomes == ["released"]
    events = [line for line in lines if line.startswith("event: ")]
    assert events[0] == "event: progress" and events[-1] == "event: answer"
    first_comment = lines.index(": keep-alive")
    assert lines.index("event: progress") < first_comment < lines.index("event: answer")


def test_a_reader_who_leaves_mid_stream_cancels_the_turn(
    gated: tuple[GatedRuntime, httpx.Client],
) -> None:
    runtime, http = gated
    with _stream_lines(http) as response:
        for line in response.iter_lines():
            if line == "event: progress":
                break  # leaving the block closes the connection mid-turn
    deadline = time.monotonic() + 5
    while not runtime.outcomes and time.monotonic() < deadline:
        time.sleep(0.02)
    assert runtime.outcomes == ["cancelled"]


class ExplodingRuntime(Runtime):
    """A runtime whose turn fails with the question in the exception's message."""

    async def ask(self, request: AskRequest, emit: Any = None) -> Result:
        raise RuntimeError(f"boom while answering {request.question!r}")


@pytest.fixture(scope="module")
def exploding(example_server: RunningServer, example_site: Path) -> Iterator[httpx.Client]:
    runtime: Runtime = example_server.app.state.runtime  # type: ignore[attr-defined]
    broken = ExplodingRuntime(sites=runtime.sites, settings=runtime.settings)
    with (
        serve_app(build_app(broken, example_site)) as running,
        httpx.Client(base_url=running.base_url, timeout=60) as http,
    ):
        yield http


def test_a_failing_turn_streams_a_generic_error_event(
    exploding: httpx.Client, caplog: pytest.LogCaptureFixture
) -> None:
    question = "Where is the unique-marker-7731 setting?"
    stream = ask_stream(exploding, {"question": question})
    assert stream.status == 200
    assert stream.names() == ["error"]
    error = stream.events[0][1]
    assert error["status"] == 500
    assert "unique-marker-7731" not in error["message"]
    assert "unique-marker-7731" not in caplog.text


def test_a_failing_turn_as_json_is_a_500_with_a_generic_message(
    exploding: httpx.Client, caplog: pytest.LogCaptureFixture
) -> None:
    response = exploding.post("/api/ask", json={"question": "What about unique-marker-7731?"})
    assert response.status_code == 500
    assert "unique-marker-7731" not in response.text
    assert "unique-marker-7731" not in caplog.text
    assert "RuntimeError" in caplog.text  # the log says what failed, not what was asked


# ---------------------------------------------------------------------- logging


@pytest.fixture
def all_logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """caplog at DEBUG on the root and on every logger that exists."""
    caplog.set_level(logging.DEBUG)
    for name in list(logging.root.manager.loggerDict):
        caplog.set_level(logging.DEBUG, logger=name)
    return caplog


def _logged_text(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join(f"{r.getMessage()} {r.args!r} {r.exc_text or ''}" for r in caplog.records)


def test_pasted_key_appears_in_no_log_record(
    client: httpx.Client, all_logs: pytest.LogCaptureFixture
) -> None:
    for mode in MODES:
        assert ask(client, CREDENTIAL, mode)["kind"] == "credential"
    logged = _logged_text(all_logs)
    assert KEY_ID not in logged and SECRET not in logged
    assert SECRET[:12] not in logged and KEY_ID[4:] not in logged


def test_each_turn_logs_one_line_of_identifiers_and_never_the_question(
    client: httpx.Client, all_logs: pytest.LogCaptureFixture
) -> None:
    result = ask(client, COVERED, "json")
    lines = [r for r in all_logs.records if result["turn_id"] in r.getMessage()]
    assert len(lines) == 1
    line = lines[0]
    assert line.levelno == logging.INFO
    message = line.getMessage()
    for fact in (f"kind={result['kind']}", f"confidence={result['confidence']}",
                 f"retriever={result['retriever']}", "duration_ms="):
        assert fact in message
    assert "exclude a page" not in _logged_text(all_logs)


# ---------------------------------------------------------------------- 4xx errors


def _error(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    error: dict[str, Any] = response.json()["error"]
    return error


def _post_raw(client: httpx.Client, content: bytes, content_type: str = "application/json") -> httpx.Response:
    return client.post("/api/ask", content=content, headers={"Content-Type": content_type})


@pytest.mark.parametrize("raw", [b'{"question": "hi"', b"not json", b"", b"[" * 5000])
def test_malformed_json_is_a_400_naming_the_body(client: httpx.Client, raw: bytes) -> None:
    assert _error(_post_raw(client, raw), 400)["field"] == "body"


def test_question_over_2000_characters_is_a_400_naming_the_limit(client: httpx.Client) -> None:
    error = _error(ask_json(client, {"question": "x" * 2001}), 400)
    assert error["field"] == "question"
    assert error["limit"] == 2000


def test_question_of_exactly_2000_characters_is_accepted(client: httpx.Client) -> None:
    assert ask_json(client, {"question": "why " * 500}).status_code == 200


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"question": 42}, "question"),
        ({"question": ["How?"]}, "question"),
        ({}, "question"),
        ({"question": "   "}, "question"),
        ({"question": "How?", "page": 3}, "page"),
        ({"question": "How?", "quote": {"text": "x"}}, "quote"),
        ({"question": "How?", "history": "earlier"}, "history"),
        ({"question": "How?", "history": ["earlier"]}, "history[0]"),
        ({"question": "How?", "history": [{"question": "a", "kind": "answer", "rescued": "yes"}]},
         "history[0].rescued"),
        ({"question": "How?", "colour": "red"}, "colour"),
        (["How?"], "body"),
    ],
)
def test_wrong_types_are_a_400_naming_the_field(
    client: httpx.Client, body: Any, field: str
) -> None:
    assert _error(ask_json(client, body), 400)["field"] == field


HUGE_INT = "1" * 5000


def raw_object(**members: str) -> str:
    """A JSON object from member texts written as JSON (so they can be what json.dumps
    never writes: a lone surrogate escape, a 5,000-digit literal)."""
    return "{" + ", ".join(f'"{key}": {value}' for key, value in members.items()) + "}"


def raw_history(**members: str) -> str:
    return "[" + raw_object(question='"q"', kind='"answer"', **members) + "]"


HOW = '"How?"'


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        (raw_object(question='"How do I \\ud800 exclude a page?"'), "question"),
        (raw_object(question='"\\udfff"'), "question"),
        (raw_object(question=HOW, page='"/\\ud83d/"'), "page"),
        (raw_object(question=HOW, quote='"a\\udc00b"'), "quote"),
        (raw_object(question=HOW, history=raw_history(markdown='"\\ud800"')),
         "history[0].markdown"),
        ('{"question": "How?", "\\ud800": 1}', "\\ud800"),
        (raw_object(question=HUGE_INT), "question"),
        (raw_object(question=HOW, page="-" + HUGE_INT), "page"),
        (raw_object(question=HOW, history=raw_history(markdown=HUGE_INT)), "history[0].markdown"),
        (raw_object(question=HOW, history=raw_history(rescued=HUGE_INT)), "history[0].rescued"),
        (raw_object(question="[" * 12 + "]" * 12), "question"),
        (raw_object(question=HOW, history="[" * 5000 + "]" * 5000), "body"),
        (raw_object(question=HOW, page='{"a":' * 3000 + "1" + "}" * 3000), "body"),
    ],
    ids=[
        "surrogate-question", "low-surrogate", "surrogate-page", "surrogate-quote",
        "surrogate-history", "surrogate-key", "huge-int-question", "huge-negative-page",
        "huge-int-history", "huge-int-rescued", "nested-question", "deep-array", "deep-object",
    ],
)
def test_hostile_json_values_are_a_400_naming_the_field(
    client: httpx.Client, all_logs: pytest.LogCaptureFixture, raw: str, field: str
) -> None:
    error = _error(_post_raw(client, raw.encode()), 400)
    assert error["field"] == field
    assert not [r for r in all_logs.records if r.levelno >= logging.ERROR], "no 500, no traceback"


def test_a_huge_integer_is_named_by_its_size_not_echoed(client: httpx.Client) -> None:
    error = _error(_post_raw(client, b'{"question": ' + HUGE_INT.encode() + b"}"), 400)
    assert "5000-digit number" in error["message"] and HUGE_INT not in error["message"]


def test_too_deep_a_body_names_the_nesting_limit(client: httpx.Client) -> None:
    raw = raw_object(question=HOW, history="[" * 40 + "]" * 40).encode()
    error = _error(_post_raw(client, raw), 400)
    assert error["field"] == "body" and error["limit"] == 16


def test_a_surrogate_in_feedback_is_a_400_naming_the_field(client: httpx.Client) -> None:
    raw = b'{"turn_id": "t-sur", "rating": "up", "note": "\\ud800"}'
    headers = {"Content-Type": "application/json"}
    response = client.post("/api/feedback", content=raw, headers=headers)
    assert _error(response, 400)["field"] == "note"


def test_unknown_history_kind_is_a_400_naming_its_path(client: httpx.Client) -> None:
    history = [{"question": "How do I install it?", "kind": "oracle", "markdown": "..."}]
    error = _error(ask_json(client, {"question": "and then?", "history": history}), 400)
    assert error["field"] == "history[0].kind"


def test_valid_history_is_accepted(client: httpx.Client) -> None:
    history = [{"question": COVERED, "kind": "passages", "markdown": "Use front matter [1]."}]
    response = ask_json(client, {"question": "and for a whole folder?", "history": history})
    assert response.status_code == 200
    assert response.json()["kind"] in ("passages", "answer", "refusal")


def test_oversized_body_is_a_413_naming_the_limit(
    client: httpx.Client, health: dict[str, Any]
) -> None:
    body = json.dumps({"question": "x", "quote": "y" * 70_000}).encode()
    error = _error(_post_raw(client, body), 413)
    assert error["field"] == "body"
    assert error["limit"] == 65536


def test_oversized_chunked_body_is_cut_off_at_the_limit(client: httpx.Client) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"question": "x", "quote": "'
        for _ in range(20):  # 20 x 8 KiB, sent chunked: no Content-Length to go by
            yield b"y" * 8192
        yield b'"}'

    response = client.post(
        "/api/ask", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert _error(response, 413)["limit"] == 65536


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", ""])
def test_non_json_content_type_is_a_415(client: httpx.Client, content_type: str) -> None:
    response = _post_raw(client, b'{"question": "How?"}', content_type)
    assert _error(response, 415)["field"] == "body"


def test_json_content_type_with_charset_is_accepted(client: httpx.Client) -> None:
    raw = json.dumps({"question": SOCIAL}).encode()
    assert _post_raw(client, raw, "application/json; charset=utf-8").status_code == 200


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32", "utf-8-sig"])
def test_a_body_that_is_not_plain_utf8_is_a_400(client: httpx.Client, encoding: str) -> None:
    # JSON between systems is UTF-8 (RFC 8259): what Python's decoder would guess from
    # other encodings is refused, not read.
    raw = json.dumps({"question": SOCIAL}).encode(encoding)
    error = _error(_post_raw(client, raw, "application/json"), 400)
    assert error["field"] == "body" and "UTF-8" in error["message"]


@pytest.mark.parametrize("charset", ["utf-16", "latin-1", "utf-32le"])
def test_a_charset_other_than_utf8_is_a_415(client: httpx.Client, charset: str) -> None:
    raw = json.dumps({"question": SOCIAL}).encode()
    response = _post_raw(client, raw, f"application/json; charset={charset}")
    assert _error(response, 415)["field"] == "body"


def test_unknown_api_path_is_a_json_404_and_wrong_method_a_405(client: httpx.Client) -> None:
    assert _error(client.get("/api/nothing-here"), 404)["field"] == "path"
    response = client.get("/api/ask")
    assert _error(response, 405)["field"] == "method"
    assert "POST" in response.headers["allow"]


# ---------------------------------------------------------------------- health


def test_health_names_the_bundle_and_the_mode(health: dict[str, Any], example_site: Path) -> None:
    import hashlib

    bundle = (example_site / "docpilot" / "bundle.msgpack").read_bytes()
    assert health["status"] == "ok"
    assert health["bundle_hash"] == hashlib.sha256(bundle).hexdigest()
    assert health["bundle_version"] == 2
    assert health["units"] > 0
    assert health["mode"] in ("hybrid", "lexical")


# ---------------------------------------------------------------------- feedback


def test_valid_feedback_is_a_204_and_kept_for_its_turn(
    client: httpx.Client, example_server: RunningServer
) -> None:
    turn_id = ask(client, COVERED, "json")["turn_id"]
    body = {"turn_id": turn_id, "rating": "down", "reasons": ["incorrect"], "note": "Wrong page."}
    response = client.post("/api/feedback", json=body)
    assert response.status_code == 204 and response.content == b""
    response = client.post("/api/feedback", json={"turn_id": turn_id, "rating": "up"})
    assert response.status_code == 204
    kept = example_server.app.state.feedback.get(turn_id)  # type: ignore[attr-defined]
    assert kept.rating == "up" and kept.note == ""  # the last feedback per turn wins


@pytest.mark.parametrize(
    ("body", "field", "limit"),
    [
        ({"turn_id": "t1", "rating": "meh"}, "rating", None),
        ({"turn_id": "t1"}, "rating", None),
        ({"rating": "up"}, "turn_id", None),
        ({"turn_id": 7, "rating": "up"}, "turn_id", None),
        ({"turn_id": "", "rating": "up"}, "turn_id", None),
        ({"turn_id": "t1\nINFO forged log line", "rating": "up"}, "turn_id", None),
        ({"turn_id": "t" * 65, "rating": "up"}, "turn_id", 64),
        ({"turn_id": "t1", "rating": "up", "reasons": ["x"] * 11}, "reasons", 10),
        ({"turn_id": "t1", "rating": "up", "reasons": ["x" * 41]}, "reasons[0]", 40),
        ({"turn_id": "t1", "rating": "up", "reasons": [3]}, "reasons[0]", None),
        ({"turn_id": "t1", "rating": "up", "reasons": ""}, "reasons", None),
        ({"turn_id": "t1", "rating": "up", "note": 0}, "note", None),
        ({"turn_id": "t1", "rating": "up", "note": "n" * 1001}, "note", 1000),
        ({"turn_id": "t1", "rating": "up", "stars": 5}, "stars", None),
    ],
)
def test_invalid_feedback_is_a_400_naming_the_field(
    client: httpx.Client, body: dict[str, Any], field: str, limit: int | None
) -> None:
    error = _error(client.post("/api/feedback", json=body), 400)
    assert error["field"] == field
    assert error.get("limit") == limit


def test_feedback_note_is_never_logged(
    client: httpx.Client, all_logs: pytest.LogCaptureFixture
) -> None:
    body = {"turn_id": "t-note", "rating": "down", "note": "my private note 5521"}
    assert client.post("/api/feedback", json=body).status_code == 204
    assert "5521" not in _logged_text(all_logs)


def test_a_feedback_flood_from_one_client_evicts_only_its_own_feedback() -> None:
    from docpilot_runtime.serve.feedback import Feedback, FeedbackStore

    store = FeedbackStore(capacity=100, per_client=5)
    store.put(Feedback(turn_id="genuine", rating="down", note="wrong page"), "198.51.100.1")
    for i in range(10_000):
        store.put(Feedback(turn_id=f"flood-{i}", rating="up"), "203.0.113.9")
    assert store.get("genuine") is not None
    assert len(store) == 6
    assert store.get("flood-9999") is not None and store.get("flood-0") is None


def test_feedback_over_http_is_bounded_per_client(
    client: httpx.Client, example_server: RunningServer
) -> None:
    store = example_server.app.state.feedback  # type: ignore[attr-defined]
    genuine = {"turn_id": "genuine-over-http", "rating": "down", "note": "a real reader"}
    # A genuine reader elsewhere; then this client floods past its own quota.
    store.put(dataclasses.replace(_feedback(genuine)), "198.51.100.77")
    for i in range(store.per_client + 20):
        body = {"turn_id": f"flood-http-{i}", "rating": "up"}
        assert client.post("/api/feedback", json=body).status_code == 204
    assert store.get("genuine-over-http") is not None
    assert store.get("flood-http-0") is None
    assert store.get(f"flood-http-{store.per_client + 19}") is not None


def _feedback(body: dict[str, Any]) -> Any:
    from docpilot_runtime.serve.feedback import parse_feedback

    return parse_feedback(body)


def test_feedback_store_keeps_only_the_newest_turns() -> None:
    from docpilot_runtime.serve.feedback import Feedback, FeedbackStore

    store = FeedbackStore(capacity=3)
    for i in range(5):
        store.put(Feedback(turn_id=f"t{i}", rating="up"))
    assert len(store) == 3
    assert store.get("t0") is None and store.get("t4") is not None


# ---------------------------------------------------------------------- CORS


def test_allowed_origin_gets_cors_headers(client: httpx.Client) -> None:
    headers = {"Origin": ALLOWED_ORIGIN}
    response = client.post("/api/ask", json={"question": SOCIAL}, headers=headers)
    assert response.headers["access-control-allow-origin"] == ALLOWED_ORIGIN
    preflight = client.options(
        "/api/ask",
        headers={
            **headers,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type",
        },
    )
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == ALLOWED_ORIGIN
    assert "POST" in preflight.headers["access-control-allow-methods"]


def test_other_origin_gets_no_cors_headers(client: httpx.Client) -> None:
    headers = {"Origin": "http://evil.example"}
    response = client.post("/api/ask", json={"question": SOCIAL}, headers=headers)
    assert "access-control-allow-origin" not in response.headers
    preflight = client.options(
        "/api/ask", headers={**headers, "Access-Control-Request-Method": "POST"}
    )
    assert preflight.status_code == 400
    assert "access-control-allow-origin" not in preflight.headers


# ---------------------------------------------------------------------- static site


def test_site_pages_are_served(client: httpx.Client) -> None:
    response = client.get("/")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert "<html" in response.text.lower()
    assert client.get("/reference/http-api/").status_code == 200
    assert client.get("/no/such/page/").status_code == 404


def test_bundle_is_served_next_to_the_site(client: httpx.Client, health: dict[str, Any]) -> None:
    import hashlib

    response = client.get("/docpilot/bundle.msgpack")
    assert response.status_code == 200
    assert hashlib.sha256(response.content).hexdigest() == health["bundle_hash"]


def test_wasm_and_module_scripts_get_the_types_browsers_require(
    example_server: RunningServer, tmp_path: Path
) -> None:
    (tmp_path / "index.html").write_text("<html></html>", encoding="utf-8")
    (tmp_path / "pyodide.asm.wasm").write_bytes(b"\0asm\1\0\0\0")
    (tmp_path / "worker.mjs").write_text("export {};", encoding="utf-8")
    runtime = example_server.app.state.runtime  # type: ignore[attr-defined]
    with (
        serve_app(build_app(runtime, tmp_path)) as running,
        httpx.Client(base_url=running.base_url) as http,
    ):
        assert http.get("/pyodide.asm.wasm").headers["content-type"] == "application/wasm"
        assert http.get("/worker.mjs").headers["content-type"].startswith("text/javascript")


# ---------------------------------------------------------------------- Material corpus


@pytest.fixture(scope="module")
def material_client(material_site: Path) -> Iterator[httpx.Client]:
    with (
        serve_app(create_app(material_site)) as running,
        httpx.Client(base_url=running.base_url, timeout=60) as http,
    ):
        yield http


@pytest.mark.parametrize(
    "question",
    [
        "How do I add a toggle between light and dark color schemes?",
        "How can I enable the blog plugin?",
        "How do I add a code annotation to a code block?",
    ],
)
def test_material_covered_questions_cite_pages_that_exist(
    material_client: httpx.Client, question: str
) -> None:
    result = ask(material_client, question, "sse")
    assert result["kind"] in ("passages", "answer"), result["markdown"]
    assert result["citations"]
    for citation in result["citations"]:
        assert_page_exists(material_client, citation["url"])


@pytest.mark.parametrize(
    "question",
    [
        "Who won the 2018 football world cup?",
        "How should I prune an apple tree in late winter?",
        OFF_TOPIC,
    ],
)
def test_material_off_topic_question_is_refused(
    material_client: httpx.Client, question: str
) -> None:
    result = ask(material_client, question, "json")
    assert result["kind"] == "refusal"
    assert 3 <= len(result["closest"]) <= 5


def test_material_health_hash_matches_results(material_client: httpx.Client) -> None:
    health = material_client.get("/api/health").json()
    assert ask(material_client, "thanks!", "json")["bundle_hash"] == health["bundle_hash"]
