"""A local server speaking Anthropic's ``POST /v1/messages`` streaming protocol, scripted.

Each test hands the server a list of steps, served in order, one per request: a `Reply`
(text, tool calls with given arguments, usage), streamed as real Messages API server-sent
events with the text in several chunks and each tool call's argument JSON split into
small ``input_json_delta`` fragments; or a `Fault` (an HTTP status, a stall longer than
the client's timeout, a malformed stream, a dropped connection, a stream cut short, an
``error`` event). Every request's headers and body are recorded, and requests are checked
the way the real API checks them (tool results must answer the previous tool uses, and
so on), answering 400 when they are wrong.

The script vocabulary (`Reply`, `ToolUse`, `Fault`, `answer_reply`, `tool_reply`) and the
HTTP plumbing (`ScriptedServer`) are shared with ``servers.openai_chat``, so one script
can be given to either server.

    with AnthropicServer([answer_reply(markdown="Use `pip` [1].", citations=["u1"])]) as s:
        settings = ProviderSettings(kind="anthropic", base_url=s.base_url, model="claude-x")
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Literal

DEFAULT_CHUNK_CHARS = 7  # small, so streamed JSON splits inside strings and escapes
STALL_SECONDS = 5.0  # longer than any client timeout a test sets; cut short by stop()
HOLD_SECONDS = 120.0  # the longest a stream waits at a `hold_before` gate nobody sets


# --- the script ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolUse:
    """A tool call the scripted model makes."""

    name: str
    arguments: dict[str, Any] | None = None  # sent as JSON
    raw: str | None = None  # exact argument text to send instead (e.g. malformed JSON)
    id: str = ""  # "" = one derived from the request number and position

    def argument_text(self) -> str:
        if self.raw is not None:
            return self.raw
        return json.dumps(self.arguments or {}, ensure_ascii=False)


@dataclass(frozen=True)
class Reply:
    """A successful streamed reply."""

    text: str = ""
    tool_calls: tuple[ToolUse, ...] = ()
    input_tokens: int = 120  # uncached input
    output_tokens: int = 40
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    stop_reason: str = ""  # "" = the vendor's own for the content (tool use / end of turn)
    thinking: str = ""  # Anthropic only: a signed thinking block before the text
    # Cut at max_tokens: the vendor's own reason for it ("length", "max_tokens").
    cut: bool = False
    # Seconds the model reads the prompt before its first token (a CPU model: tens of
    # seconds); the server sends what it sends meanwhile (pings, a role-only chunk).
    first_token_delay: float = 0.0


FaultKind = Literal[
    "status",
    "stall",
    "stall_mid_stream",
    "drop",
    "malformed",
    "truncated",
    "stream_error",
    "keepalive",
    "slow",
]


@dataclass(frozen=True)
class Fault:
    """A scripted failure instead of a reply.

    status: answer `status` (500, 429, 400...) with the vendor's JSON error body.
    stall: send nothing for `seconds`, then close. stall_mid_stream: stream
    `partial_text`, then the same. drop: stream `partial_text`, then close the connection
    mid-body. malformed: stream `partial_text`, then an event whose JSON is cut off.
    truncated: stream `partial_text`, then end the body cleanly without the closing events.
    stream_error: open the stream, then send the vendor's error event (`error_type`).
    keepalive: open the stream and send only ``: keep-alive`` comments, one per
    `interval`, for `seconds` (as hosted routers do while a request is queued).
    slow: open the stream, then send `partial_text` again and again, one chunk per
    `interval`, for `seconds` or until the client closes the stream.
    The last two end early when the client goes away; `ScriptedServer.closed_by_client`
    records it.
    """

    kind: FaultKind
    status: int = 500
    retry_after: str | None = None
    message: str = "scripted failure"  # status: the error body's message
    seconds: float = STALL_SECONDS
    partial_text: str = "Partial answer that never finishes"
    error_type: str = "overloaded_error"
    interval: float = 0.02  # keepalive, slow: seconds between writes


Step = Reply | Fault


def tool_reply(name: str, arguments: dict[str, Any] | None = None, **reply: Any) -> Reply:
    """A reply that makes one call of tool `name` with `arguments`."""
    return Reply(tool_calls=(ToolUse(name, arguments),), **reply)


def answer_reply(**arguments: Any) -> Reply:
    """A reply that calls the ``answer`` tool with exactly these keyword arguments."""
    return tool_reply("answer", arguments)


TextCallForm = Literal["fenced", "tagged", "bare"]


def text_call(
    name: str, arguments: dict[str, Any], form: TextCallForm = "fenced", before: str = ""
) -> Reply:
    """A reply that writes its tool call as text, as small models do (issue 22): a fenced
    JSON block (what Qwen2.5-Coder writes), Qwen's ``<tool_call>`` tags, or bare JSON;
    a server that cannot parse it sends it as text."""
    call = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False, indent=2)
    body = {
        "fenced": f"```json\n{call}\n```",
        "tagged": f"<tool_call>\n{call}\n</tool_call>",
        "bare": call,
    }[form]
    return Reply(text=f"{before}\n\n{body}" if before else body)


def chunks(text: str, size: int) -> list[str]:
    """`text` cut into pieces of `size` characters (at least one piece, maybe empty)."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


# --- the HTTP plumbing shared by the vendor servers -----------------------------------------


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]  # lower-cased names
    body: dict[str, Any]


@dataclass
class Answer:
    """What the server decided to do with one request."""

    status: int = 200
    json_body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    step: Step | None = None
    number: int = 0  # 1-based request number, for ids


@dataclass(frozen=True)
class Wait:
    """In a reply's events: hold the stream for ``seconds`` (the vendor pings meanwhile)."""

    seconds: float


class _HTTPServer(ThreadingHTTPServer):
    """Remembers open connections so stop() can end keep-alive and stalled ones at once."""

    def __init__(self, owner: ScriptedServer) -> None:
        self.owner = owner
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.connections_lock:
            self.connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.connections_lock:
            self.connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        with self.connections_lock:
            for connection in list(self.connections):
                with contextlib.suppress(OSError):  # already closed by the client
                    connection.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive and chunked bodies, like the real APIs
    server: _HTTPServer
    timeout = 30  # an idle keep-alive connection is closed after this

    def do_POST(self) -> None:
        owner = self.server.owner
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            body = {"_unparsed": raw.decode(errors="replace")}
        headers = {name.lower(): value for name, value in self.headers.items()}
        answer = owner.decide(RecordedRequest(self.path, headers, body))
        try:
            self._serve(owner, answer, body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up first (a timeout test)
            owner.record_closed(answer.number)

    def _serve(self, owner: ScriptedServer, answer: Answer, body: dict[str, Any]) -> None:
        step = answer.step
        if step is None or (isinstance(step, Fault) and step.kind == "status"):
            self._send_json(answer.status, answer.json_body or {}, answer.headers)
            return
        if isinstance(step, Reply):
            self._start_stream()
            streamed = ""  # the reply's text and tool-argument JSON written so far
            for event in owner.reply_events(step, answer.number, body):
                if isinstance(event, Wait):
                    self._wait(owner, event.seconds)
                    continue
                streamed = owner.hold_at(streamed, event)
                self._write_event(event)
                if owner.pace:
                    owner.hold(owner.pace)
            self._end_stream()
            return
        if step.kind == "stall":
            owner.hold(step.seconds)
            self.close_connection = True
            return
        self._start_stream()
        owner.record_started(answer.number)
        if step.kind == "keepalive":
            self._write_until_closed(owner, step, [": keep-alive\n\n"])
            return
        opening = owner.opening_events(answer.number, body)
        if step.kind == "slow":
            for event in opening:
                self._write_event(event)
            events = owner.text_events(step.partial_text, answer.number, body)
            # Never the closing event: the text goes on (its last delta repeats).
            pieces = [event for event in events if "content_block_stop" not in event]
            self._write_until_closed(owner, step, pieces)
            return
        if step.kind == "stream_error":
            for event in [*opening, owner.error_event(step.error_type)]:
                self._write_event(event)
            self._end_stream()
            return
        for event in [*opening, *owner.text_events(step.partial_text, answer.number, body)]:
            self._write_event(event)
        if step.kind == "malformed":
            self._write_event(owner.broken_event())
            self._end_stream()
        elif step.kind == "truncated":
            self._end_stream()
        else:  # drop, stall_mid_stream: the body never completes
            if step.kind == "stall_mid_stream":
                owner.hold(step.seconds)
            self.close_connection = True

    def _wait(self, owner: ScriptedServer, seconds: float) -> None:
        """The model reads the prompt: ``seconds`` pass, with the vendor's keep-alive
        written every ``owner.ping_interval`` (nothing when it has none)."""
        left = seconds
        while left > 0 and not owner.stopping:
            pause = min(left, owner.ping_interval)
            owner.hold(pause)
            left -= pause
            ping = owner.keepalive()
            if ping and left > 0:
                self._write_event(ping)

    def _write_until_closed(self, owner: ScriptedServer, step: Fault, events: list[str]) -> None:
        """Write `events` in order, then the last one again and again, one per
        `step.interval`, for `step.seconds`; a client that closes the stream ends it
        with BrokenPipe/ConnectionReset."""
        rounds = max(1, int(step.seconds / step.interval))
        for turn in range(rounds):
            if owner.stopping:
                break
            self._write_event(events[min(turn, len(events) - 1)])
            owner.hold(step.interval)
        self.close_connection = True

    def _send_json(self, status: int, payload: dict[str, Any], headers: dict[str, str]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _write_event(self, event: str) -> None:
        # Each event goes in two HTTP chunks, split mid-line, so the client's line
        # reassembly is exercised as it is by real proxies.
        data = event.encode()
        half = len(data) // 2
        for piece in (data[:half], data[half:]):
            if piece:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        self.wfile.flush()

    def _end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output quiet; requests are recorded instead


class ScriptedServer:
    """Serves scripted steps in order, one per request; subclasses speak a vendor's wire."""

    path: ClassVar[str] = ""
    url_suffix: ClassVar[str] = ""

    def __init__(
        self,
        steps: Iterable[Step] = (),
        *,
        api_key: str | None = None,
        chunk_chars: int = DEFAULT_CHUNK_CHARS,
        pace: float = 0.0,
        ping_interval: float = 0.05,
    ) -> None:
        self.steps: deque[Step] = deque(steps)
        self.pace = pace  # seconds between a reply's events, as a model writes (0 = at once)
        self.ping_interval = ping_interval  # keep-alives while a reply waits (first_token_delay)
        self.requests: list[RecordedRequest] = []
        self.api_key = api_key  # when set, any other key is refused with 401
        self.chunk_chars = chunk_chars
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        # Request numbers whose stream opened / that the client closed before it ended.
        self.started_streams: set[int] = set()
        self.closed_by_client: set[int] = set()
        self._changed = threading.Condition()
        # (text, gate): a reply's stream waits before the event that would complete `text`
        # until the test sets `gate` (`hold_before`); `held` lists the texts it waited at.
        self._holds: deque[tuple[str, threading.Event]] = deque()
        self._gates: list[threading.Event] = []
        self.held: list[str] = []
        self._httpd = _HTTPServer(self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}{self.url_suffix}"

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [request.body for request in self.requests]

    def script(self, *steps: Step) -> None:
        """Add steps after those still waiting."""
        with self._lock:
            self.steps.extend(steps)

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop serving, end stalls and open connections, close the listening socket."""
        self._stopping.set()
        for gate in self._gates:  # a stream waiting at a hold ends now
            gate.set()
        if self._thread.is_alive():
            self._httpd.shutdown()
            self._thread.join()
        self._httpd.close_connections()
        self._httpd.server_close()  # joins the request threads

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def record_started(self, number: int) -> None:
        with self._changed:
            self.started_streams.add(number)
            self._changed.notify_all()

    def record_closed(self, number: int) -> None:
        with self._changed:
            self.closed_by_client.add(number)
            self._changed.notify_all()

    def wait_until(self, condition: Callable[[ScriptedServer], bool], timeout: float) -> bool:
        """Block until `condition(self)` holds (re-checked whenever a stream opens or is
        closed by its client), or `timeout` passes; whether it held."""
        with self._changed:
            return self._changed.wait_for(lambda: condition(self), timeout)

    def hold_before(self, text: str) -> threading.Event:
        """Make the next replies' streams wait just before the event that completes
        ``text`` (in the reply's text or a tool call's argument JSON, as written on the
        wire) until the returned gate is set: a model that has written everything before
        it and not yet the rest. Holds apply in the order they were added."""
        gate = threading.Event()
        with self._lock:
            self._holds.append((text, gate))
            self._gates.append(gate)
        return gate

    def hold_at(self, streamed: str, event: str) -> str:
        """What the reply has streamed once ``event`` is written, after waiting at the
        first hold whose text that completes (at most HOLD_SECONDS, or until the server
        stops). Nothing is read while no hold waits."""
        with self._lock:
            if not self._holds:
                return streamed
            text, gate = self._holds[0]
            after = streamed + self.streamed_piece(event)
            if text not in after:
                return after
            self._holds.popleft()
        with self._changed:
            self.held.append(text)
            self._changed.notify_all()
        gate.wait(HOLD_SECONDS)
        return after

    def streamed_piece(self, event: str) -> str:
        """The text or argument JSON an event of a reply adds ("" for other events); read
        only while a hold waits."""
        raise NotImplementedError(f"{type(self).__name__} does not support hold_before")

    def hold(self, seconds: float) -> None:
        """Wait `seconds`, or less if the server is stopping (never sleeps past a test)."""
        self._stopping.wait(seconds)

    def decide(self, request: RecordedRequest) -> Answer:
        """Record the request and choose its answer, under the lock so scripts count exactly."""
        with self._lock:
            self.requests.append(request)
            number = len(self.requests)
            if request.path != self.path:
                return self.error_answer(404, "not_found_error", f"Unknown path {request.path}")
            if self.api_key is not None and self.sent_key(request.headers) != self.api_key:
                # Real APIs echo (a masked form of) the key; echo it whole, so a test can
                # prove the client never repeats it.
                sent = self.sent_key(request.headers)
                return self.error_answer(
                    401, "authentication_error", f"Incorrect API key provided: {sent}"
                )
            problem = self.check_request(request)
            if problem:
                return self.error_answer(400, "invalid_request_error", problem)
            if not self.steps:
                return self.error_answer(
                    500, "api_error", f"the script has no step left for request {number}"
                )
            step = self.steps.popleft()
        if isinstance(step, Fault) and step.kind == "status":
            answer = self.error_answer(step.status, _error_type(step.status), step.message)
            if step.retry_after is not None:
                answer.headers["Retry-After"] = step.retry_after
            answer.step = step
            return answer
        return Answer(step=step, number=number)

    # --- what each vendor defines ------------------------------------------------------------

    def sent_key(self, headers: dict[str, str]) -> str:
        raise NotImplementedError

    def check_request(self, request: RecordedRequest) -> str:
        """ "" when the request is one the real API would accept, else why not."""
        raise NotImplementedError

    def error_answer(self, status: int, error_type: str, message: str) -> Answer:
        raise NotImplementedError

    def reply_events(
        self, reply: Reply, number: int, body: dict[str, Any]
    ) -> Iterator[str | Wait]:
        raise NotImplementedError

    def keepalive(self) -> str:
        """What the vendor writes while a reply waits ("" for nothing)."""
        return ""

    def opening_events(self, number: int, body: dict[str, Any]) -> list[str]:
        raise NotImplementedError

    def text_events(self, text: str, number: int, body: dict[str, Any]) -> list[str]:
        """Events streaming `text` after the opening ones (mid-stream faults use them)."""
        raise NotImplementedError

    def error_event(self, error_type: str) -> str:
        raise NotImplementedError

    def broken_event(self) -> str:
        raise NotImplementedError


def _error_type(status: int) -> str:
    if status == 429:
        return "rate_limit_error"
    if status == 529:
        return "overloaded_error"
    if status >= 500:
        return "api_error"
    return "invalid_request_error"


# --- Anthropic -------------------------------------------------------------------------------


def _event(name: str, data: dict[str, Any]) -> str:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


class AnthropicServer(ScriptedServer):
    """Anthropic's Messages API: point a provider's base_url at ``base_url``."""

    path = "/v1/messages"

    def sent_key(self, headers: dict[str, str]) -> str:
        return headers.get("x-api-key", "")

    def error_answer(self, status: int, error_type: str, message: str) -> Answer:
        body = {"type": "error", "error": {"type": error_type, "message": message}}
        return Answer(status=status, json_body=body)

    def check_request(self, request: RecordedRequest) -> str:
        if request.headers.get("anthropic-version") != "2023-06-01":
            return "anthropic-version: header is required (2023-06-01)"
        return check_messages_request(request.body)

    def opening_events(self, number: int, body: dict[str, Any]) -> list[str]:
        return self._opening(Reply(), number, body)

    def _opening(self, reply: Reply, number: int, body: dict[str, Any]) -> list[str]:
        message = {
            "id": f"msg_{number:04d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", ""),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": reply.input_tokens,
                "cache_creation_input_tokens": reply.cache_write_tokens,
                "cache_read_input_tokens": reply.cache_read_tokens,
                "output_tokens": 1,
            },
        }
        return [
            _event("message_start", {"type": "message_start", "message": message}),
            _event("ping", {"type": "ping"}),
        ]

    def text_events(
        self, text: str, number: int = 0, body: dict[str, Any] | None = None, index: int = 0
    ) -> list[str]:
        events = [
            _event(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                },
            )
        ]
        for piece in chunks(text, self.chunk_chars):
            events.append(_delta(index, {"type": "text_delta", "text": piece}))
        events.append(_event("content_block_stop", {"type": "content_block_stop", "index": index}))
        return events

    def keepalive(self) -> str:
        return _event("ping", {"type": "ping"})

    def reply_events(
        self, reply: Reply, number: int, body: dict[str, Any]
    ) -> Iterator[str | Wait]:
        yield from self._opening(reply, number, body)
        if reply.first_token_delay:
            yield Wait(reply.first_token_delay)  # message_start came at once; pings follow
        index = 0
        if reply.thinking:
            yield from self._thinking_events(reply.thinking, index, number)
            index += 1
        if reply.text:
            yield from self.text_events(reply.text, index=index)
            index += 1
        for position, call in enumerate(reply.tool_calls):
            block = {
                "type": "tool_use",
                "id": call.id or f"toolu_{number:03d}_{position}",
                "name": call.name,
                "input": {},
            }
            yield _event(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": block},
            )
            # The real API opens with an empty fragment, then streams the JSON in pieces.
            for piece in ["", *chunks(call.argument_text(), self.chunk_chars)]:
                yield _delta(index, {"type": "input_json_delta", "partial_json": piece})
            yield _event("content_block_stop", {"type": "content_block_stop", "index": index})
            index += 1
        stop = reply.stop_reason or (
            "max_tokens" if reply.cut else "tool_use" if reply.tool_calls else "end_turn"
        )
        yield _event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": reply.output_tokens},
            },
        )
        yield _event("message_stop", {"type": "message_stop"})

    def _thinking_events(self, thinking: str, index: int, number: int) -> Iterator[str]:
        block = {"type": "thinking", "thinking": "", "signature": ""}
        yield _event(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": block},
        )
        for piece in chunks(thinking, self.chunk_chars):
            yield _delta(index, {"type": "thinking_delta", "thinking": piece})
        yield _delta(index, {"type": "signature_delta", "signature": thinking_signature(number)})
        yield _event("content_block_stop", {"type": "content_block_stop", "index": index})

    def streamed_piece(self, event: str) -> str:
        if '"content_block_delta"' not in event:
            return ""
        delta = json.loads(event.split("data: ", 1)[1])["delta"]
        return str(delta.get("text") or delta.get("partial_json") or "")

    def error_event(self, error_type: str) -> str:
        error = {"type": error_type, "message": "Overloaded" if "overload" in error_type else ""}
        return _event("error", {"type": "error", "error": error})

    def broken_event(self) -> str:
        return (
            'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "de\n\n'
        )


def _delta(index: int, delta: dict[str, Any]) -> str:
    return _event(
        "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
    )


def thinking_signature(number: int) -> str:
    """The signature the server puts on request `number`'s thinking block."""
    return f"sig-{number:04d}-EqQBCgIYAhIM"


def check_messages_request(body: dict[str, Any]) -> str:
    """Why the Messages API would refuse `body` with 400, or "" if it would take it."""
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model: field required"
    max_tokens = body.get("max_tokens")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        return "max_tokens: field required (a positive integer)"
    if body.get("stream") is not True:
        return "this scripted server only streams: send stream: true"
    breakpoints = 0
    system = body.get("system", [])
    if isinstance(system, list):
        for position, block in enumerate(system):
            if not isinstance(block, dict) or block.get("type") != "text" or not block.get("text"):
                return f"system.{position}: text content blocks must be non-empty"
            breakpoints += "cache_control" in block
    elif not isinstance(system, str):
        return "system: must be a string or a list of text blocks"
    tools = body.get("tools", [])
    for position, tool in enumerate(tools):
        schema = tool.get("input_schema") if isinstance(tool, dict) else None
        if not isinstance(schema, dict) or schema.get("type") != "object" or not tool.get("name"):
            return f"tools.{position}: name and an input_schema of type object are required"
        breakpoints += "cache_control" in tool
    if "tool_choice" in body and not tools:
        return "tool_choice may only be specified while providing tools"
    problem, message_breakpoints = _check_messages(body.get("messages"))
    if problem:
        return problem
    if breakpoints + message_breakpoints > 4:
        return "A maximum of 4 blocks with cache_control may be provided"
    return ""


def _check_messages(messages: object) -> tuple[str, int]:
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required", 0
    if not isinstance(messages[0], dict) or messages[0].get("role") != "user":
        return "messages.0.role: the first message must use the user role", 0
    breakpoints = 0
    pending_tool_uses: list[str] = []
    for position, message in enumerate(messages):
        where = f"messages.{position}"
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("user", "assistant"):
            return f"{where}.role: must be user or assistant", 0
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            return f"{where}.content: must be a string or a list of blocks", 0
        if role == "user" and pending_tool_uses:
            answered = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
            leading = blocks[: len(answered)]
            if sorted(answered) != sorted(pending_tool_uses) or any(
                b.get("type") != "tool_result" for b in leading
            ):
                return (
                    f"{where}: tool_use ids were found without tool_result blocks immediately "
                    f"after: {pending_tool_uses}",
                    0,
                )
        elif role == "user" and any(b.get("type") == "tool_result" for b in blocks):
            return f"{where}: unexpected tool_use_id found in tool_result blocks", 0
        pending_tool_uses = []
        for block in blocks:
            breakpoints += "cache_control" in block
            if block.get("type") == "text" and not block.get("text") and isinstance(content, list):
                return f"{where}: text content blocks must be non-empty", 0
            if block.get("type") == "tool_use":
                if role != "assistant" or not isinstance(block.get("input"), dict):
                    return f"{where}: tool_use blocks need an assistant turn and an object input", 0
                pending_tool_uses.append(str(block.get("id")))
    if pending_tool_uses:
        return "the last assistant message has tool_use blocks without results", 0
    return "", breakpoints
