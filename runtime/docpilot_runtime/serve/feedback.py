"""`POST /api/feedback`: a reader's rating of a turn, kept in memory and in the records.

The note is the reader's own text: checked for credentials like a question (one holding
a secret is dropped, the rating kept) and never logged."""

from __future__ import annotations

import logging
import re
import time
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any, Literal

from starlette.requests import Request
from starlette.responses import Response

from docpilot_runtime.records import FeedbackRecord
from docpilot_runtime.screen.credentials import find_credential
from docpilot_runtime.serve.requests import (
    HTTPRequestError,
    client_of,
    error_response,
    read_json,
    runtime_of,
)
from docpilot_runtime.shared.types import (
    RequestError,
    check_text,
)

log = logging.getLogger("docpilot.app")

# Feedback kept per turn in memory until records land; bounded so a flood of
# made-up turn ids cannot grow the process without limit, and per client so one
# client's flood evicts only its own older feedback, never another reader's.
FEEDBACK_CAPACITY = 10_000
FEEDBACK_PER_CLIENT = 50
MAX_REASONS = 10
MAX_REASON_CHARS = 40
# The reason tags a thumbs-down may carry (the widget offers the first three).
REASON_TAGS = ("incorrect", "incomplete", "unclear", "outdated", "off_topic", "other")
MAX_NOTE_CHARS = 1000
MAX_TURN_ID_CHARS = 64
TURN_ID_SHAPE = re.compile(r"[A-Za-z0-9_-]+")
FEEDBACK_BODY_BYTES = 16_384

@dataclass(frozen=True)
class Feedback:
    turn_id: str
    rating: Literal["up", "down"]
    reasons: tuple[str, ...] = ()
    note: str = ""


def parse_feedback(body: Any) -> Feedback:
    """Check a decoded `POST /api/feedback` body; errors name the field and the limit."""
    if not isinstance(body, dict):
        raise RequestError("body", "must be a JSON object")
    unknown = set(body) - {"turn_id", "rating", "reasons", "note"}
    if unknown:
        raise RequestError(sorted(unknown)[0], "is not a known field")
    turn_id = body.get("turn_id")
    if not isinstance(turn_id, str):
        raise RequestError("turn_id", "must be a string")
    if len(turn_id) > MAX_TURN_ID_CHARS:
        raise RequestError("turn_id", "is over the limit", MAX_TURN_ID_CHARS)
    # The turn id is logged; this shape keeps newlines and pasted text out of the log.
    if not TURN_ID_SHAPE.fullmatch(turn_id):
        raise RequestError("turn_id", "must be letters, digits, '-' or '_'")
    rating = body.get("rating")
    if rating not in ("up", "down"):
        raise RequestError("rating", 'must be "up" or "down"')
    # Absent and null mean "none"; a present value of another type is an error, not [].
    reasons = body.get("reasons")
    reasons = [] if reasons is None else reasons
    if not isinstance(reasons, list):
        raise RequestError("reasons", "must be a list of strings")
    if len(reasons) > MAX_REASONS:
        raise RequestError("reasons", f"has {len(reasons)} items, over the limit", MAX_REASONS)
    for i, reason in enumerate(reasons):
        if not isinstance(reason, str):
            raise RequestError(f"reasons[{i}]", "must be a string")
        if len(reason) > MAX_REASON_CHARS:
            raise RequestError(f"reasons[{i}]", "is over the limit", MAX_REASON_CHARS)
        if reason not in REASON_TAGS:
            raise RequestError(f"reasons[{i}]", f"must be one of {', '.join(REASON_TAGS)}")
    note = body.get("note")
    note = "" if note is None else note
    if not isinstance(note, str):
        raise RequestError("note", "must be a string")
    if len(note) > MAX_NOTE_CHARS:
        raise RequestError("note", f"is {len(note)} characters, over the limit", MAX_NOTE_CHARS)
    for i, reason in enumerate(reasons):
        check_text(reason, f"reasons[{i}]")
    check_text(note, "note")
    return Feedback(turn_id=turn_id, rating=rating, reasons=tuple(reasons), note=note)


class FeedbackStore:
    """The latest feedback per turn, at most ``per_client`` turns per client address
    (a client's own oldest dropped first) and ``capacity`` in all (oldest dropped)."""

    def __init__(
        self, capacity: int = FEEDBACK_CAPACITY, per_client: int = FEEDBACK_PER_CLIENT
    ) -> None:
        self.capacity = capacity
        self.per_client = per_client
        self._items: OrderedDict[str, tuple[str, Feedback]] = OrderedDict()
        self._by_client: dict[str, OrderedDict[str, None]] = {}

    def _drop(self, turn_id: str) -> None:
        client, _ = self._items.pop(turn_id)
        turns = self._by_client[client]
        del turns[turn_id]
        if not turns:
            del self._by_client[client]

    def put(self, feedback: Feedback, client: str = "") -> None:
        if feedback.turn_id in self._items:
            self._drop(feedback.turn_id)
        self._items[feedback.turn_id] = (client, feedback)
        turns = self._by_client.setdefault(client, OrderedDict())
        turns[feedback.turn_id] = None
        while len(turns) > self.per_client:
            self._drop(next(iter(turns)))
        while len(self._items) > self.capacity:
            self._drop(next(iter(self._items)))

    def get(self, turn_id: str) -> Feedback | None:
        entry = self._items.get(turn_id)
        return entry[1] if entry else None

    def __len__(self) -> int:
        return len(self._items)


async def feedback(request: Request) -> Response:
    """`POST /api/feedback`: a rating for a turn, kept in memory; 204 on success."""
    seconds = runtime_of(request).settings.caps.body_read_seconds
    try:
        item = parse_feedback(await read_json(request, FEEDBACK_BODY_BYTES, seconds))
    except HTTPRequestError as exc:
        return error_response(exc, exc.status)
    except RequestError as exc:
        return error_response(exc, 400)
    if item.note and find_credential(item.note) is not None:
        item = replace(item, note="")  # as a history item holding one: dropped, never kept
    store: FeedbackStore = request.app.state.feedback
    store.put(item, client_of(request))
    recorder = runtime_of(request).recorder
    if recorder is not None:  # kept with the turn; an unknown turn id stays in memory only
        now_ms = int(time.time() * 1000)
        await recorder.feedback(
            FeedbackRecord(item.turn_id, now_ms, item.rating, item.reasons, item.note)
        )
    # Rating and counts only: reasons are free strings and the note is the reader's text.
    log.info("feedback %s rating=%s reasons=%d", item.turn_id, item.rating, len(item.reasons))
    return Response(status_code=204)


