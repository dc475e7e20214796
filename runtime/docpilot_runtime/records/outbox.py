"""The webhook outbox: rows in the records database, one per event and receiver URL.

Rows are inserted in the same transaction that stores the turn or feedback they report
(`RecordStore.write`), so an event exists exactly when its record does: the spool's
replay after a crash inserts both or neither, and `ON CONFLICT DO NOTHING` keeps a
replayed event single. A sender *claims* due rows by moving their `next_attempt_ms`
past a lease (a conditional UPDATE, so two processes never hold the same row), posts
them, then marks each delivered, due again later, or failed after its last attempt. A
sender that dies mid-post leaves the lease to run out and the row is sent again: at
least once, with the same idempotency key (`event_id`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from docpilot_runtime.records.schema import SET_VERDICT, VerdictRecord


class Database(Protocol):
    """What the outbox needs of the records store (`store.RecordStore`, which writes
    the outbox's rows in its own transactions: the store imports this module, not the
    other way round)."""

    def sql(self, statement: str) -> str: ...

    def transaction(self) -> AbstractContextManager[Any]: ...

QUESTION_ASKED = "chat.question_asked"
NO_ANSWER = "chat.no_answer"
FEEDBACK = "chat.feedback"
EVENT_TYPES = (QUESTION_ASKED, NO_ANSWER, FEEDBACK)
MAX_ERROR_CHARS = 200

INSERT_EVENT = (
    "INSERT INTO webhook_outbox (event_id, target, event_type, turn_id, created_ms, body, "
    "attempts, next_attempt_ms) VALUES (?, ?, ?, ?, ?, ?, 0, ?) "
    "ON CONFLICT (event_id, target) DO NOTHING"
)
# A turn waiting for its second opinion is released as soon as the verdict lands.
RELEASE_HELD = (
    "UPDATE webhook_outbox SET next_attempt_ms = ? WHERE turn_id = ? AND attempts = 0 "
    "AND delivered_ms IS NULL AND next_attempt_ms > ?"
)
PENDING = "delivered_ms IS NULL AND failed_ms IS NULL"
SELECT_DUE = (
    "SELECT o.event_id, o.target, o.event_type, o.attempts, o.next_attempt_ms, o.body, "
    "t.verdict FROM webhook_outbox o LEFT JOIN turns t ON t.turn_id = o.turn_id "
    "WHERE o.delivered_ms IS NULL AND o.failed_ms IS NULL AND o.next_attempt_ms <= ? "
    "ORDER BY o.next_attempt_ms, o.created_ms LIMIT ?"
)
CLAIM = (
    "UPDATE webhook_outbox SET next_attempt_ms = ? "
    "WHERE event_id = ? AND target = ? AND next_attempt_ms = ? AND " + PENDING
)


@dataclass(frozen=True)
class OutboxEvent:
    """One event for one receiver, as inserted; `body` is the JSON envelope."""

    event_id: str
    target: str
    event_type: str
    turn_id: str
    created_ms: int
    body: str
    not_before_ms: int  # first attempt; later than created when waiting for a verdict

    def row(self) -> tuple[Any, ...]:
        return (
            self.event_id,
            self.target,
            self.event_type,
            self.turn_id,
            self.created_ms,
            self.body,
            self.not_before_ms,
        )


@dataclass(frozen=True)
class Delivery:
    """A claimed row: what to post, and which attempt this is (1 = the first)."""

    event_id: str
    target: str
    event_type: str
    attempt: int
    body: bytes


def insert_events(store: Database, cursor: Any, events: Sequence[OutboxEvent]) -> None:
    """Inside `RecordStore.write`'s transaction: the events of the records it stores."""
    if events:
        cursor.executemany(store.sql(INSERT_EVENT), [event.row() for event in events])


def apply_verdicts(
    store: Database, cursor: Any, verdicts: Sequence[VerdictRecord], now_ms: int
) -> None:
    """Inside the same transaction: store each verdict with its turn, release its events."""
    for item in verdicts:
        cursor.execute(
            store.sql(SET_VERDICT), (item.verdict, item.model, item.cost_micro_usd, item.turn_id)
        )
        cursor.execute(store.sql(RELEASE_HELD), (now_ms, item.turn_id, now_ms))


def _with_verdict(body: str, event_type: str, verdict: str | None) -> bytes:
    """The body as sent: a `chat.question_asked` carries the turn's verdict once known."""
    if event_type == QUESTION_ASKED and verdict:
        envelope = json.loads(body)
        if isinstance(envelope.get("data"), dict) and "verdict" in envelope["data"]:
            envelope["data"]["verdict"] = verdict
            body = json.dumps(envelope, ensure_ascii=False, separators=(",", ":"))
    return body.encode("utf-8")


def claim_due(store: Database, now_ms: int, lease_ms: int, limit: int) -> list[Delivery]:
    """Rows due now, claimed for ``lease_ms`` (no other sender takes them meanwhile)."""
    claimed: list[Delivery] = []
    with store.transaction() as cursor:
        cursor.execute(store.sql(SELECT_DUE), (now_ms, limit))
        for event_id, target, event_type, attempts, due, body, verdict in cursor.fetchall():
            cursor.execute(store.sql(CLAIM), (now_ms + lease_ms, event_id, target, due))
            if cursor.rowcount == 1:
                payload = _with_verdict(body, event_type, verdict)
                claimed.append(Delivery(event_id, target, event_type, int(attempts) + 1, payload))
    return claimed


def mark_delivered(store: Database, delivery: Delivery, now_ms: int) -> None:
    with store.transaction() as cursor:
        cursor.execute(
            store.sql(
                "UPDATE webhook_outbox SET delivered_ms = ?, attempts = ?, last_error = NULL "
                "WHERE event_id = ? AND target = ?"
            ),
            (now_ms, delivery.attempt, delivery.event_id, delivery.target),
        )


def mark_attempt_failed(
    store: Database, delivery: Delivery, error: str, next_ms: int | None, now_ms: int
) -> None:
    """Count the failed attempt; due again at ``next_ms``, or failed for good when None."""
    with store.transaction() as cursor:
        cursor.execute(
            store.sql(
                "UPDATE webhook_outbox SET attempts = ?, last_error = ?, next_attempt_ms = ?, "
                "failed_ms = ? WHERE event_id = ? AND target = ?"
            ),
            (
                delivery.attempt,
                error[:MAX_ERROR_CHARS],
                next_ms if next_ms is not None else now_ms,
                None if next_ms is not None else now_ms,
                delivery.event_id,
                delivery.target,
            ),
        )


def next_due_ms(store: Database) -> int | None:
    """When the earliest pending row is due (None when nothing is pending)."""
    with store.transaction() as cursor:
        cursor.execute(f"SELECT MIN(next_attempt_ms) FROM webhook_outbox WHERE {PENDING}")
        row = cursor.fetchone()
    return None if row is None or row[0] is None else int(row[0])


def outbox_depth(store: Database) -> int:
    """Rows still to deliver (neither delivered nor failed for good)."""
    with store.transaction() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM webhook_outbox WHERE {PENDING}")
        row = cursor.fetchone()
    return int(row[0]) if row else 0


def outbox_rows(store: Database) -> list[dict[str, Any]]:
    """Every row, for tests and the owner's diagnostics (bodies left out)."""
    columns = ("event_id", "target", "event_type", "turn_id", "attempts", "delivered_ms",
               "failed_ms", "last_error")
    with store.transaction() as cursor:
        cursor.execute(f"SELECT {', '.join(columns)} FROM webhook_outbox ORDER BY created_ms")
        return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]
