"""Webhooks: the events a turn and its feedback raise, how they are signed, and the sender
that delivers them from the outbox (`outbox.py`) at least once.

Every delivery is a `POST` of a JSON envelope ``{"id", "type", "created_ms", "data"}``
with these headers (documented in the records guide, with a receiver that checks them):

- ``DocPilot-Event``: the event type; ``DocPilot-Idempotency-Key``: the envelope's `id`,
  the same on every retry and after a restart, so a receiver that remembers keys
  processes each event once;
- ``DocPilot-Timestamp``: Unix seconds when this attempt was signed;
- ``DocPilot-Signature``: ``v1=`` + hex HMAC-SHA256, keyed with the shared secret, of
  ``timestamp + "." + body`` (the raw bytes), so a replayed old body fails a receiver
  that checks the timestamp is recent;
- ``DocPilot-Attempt``: 1 for the first try.

A `credential` turn's events carry only its kind; a turn whose reader has not consented
(where the owner requires it) carries its kind and nothing of the question.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import httpx

from docpilot_runtime.records.outbox import (
    FEEDBACK,
    NO_ANSWER,
    QUESTION_ASKED,
    Delivery,
    OutboxEvent,
    claim_due,
    mark_attempt_failed,
    mark_delivered,
    next_due_ms,
)
from docpilot_runtime.records.schema import FeedbackRecord, TurnRecord
from docpilot_runtime.records.store import RecordStore
from docpilot_runtime.settings.webhooks import WebhookSettings

log = logging.getLogger("docpilot.webhooks")

SIGNATURE_VERSION = "v1"
BATCH = 16  # deliveries claimed (and posted concurrently) per pass
IDLE_POLL_SECONDS = 5.0  # another process may have queued events: look again this often
STORE_RETRY_SECONDS = 2.0
LEASE_MARGIN_SECONDS = 10.0  # beyond the delivery timeout, for the database writes
# Fields of a turn an event carries (when the question may be shared at all).
TURN_FIELDS = (
    "turn_id", "created_ms", "kind", "question", "confidence", "model_confidence",
    "tentative", "retriever", "rescued", "cited_pages", "closest", "provider", "model",
    "cost_micro_usd", "bundle_hash", "verdict",
)




def event_key(event_type: str, *parts: object) -> str:
    """The idempotency key: stable across retries and restarts, and not the turn id
    itself (a receiver of a credential turn's event learns only its kind)."""
    text = ":".join([event_type, *map(str, parts)])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def sign(secret: bytes, timestamp: int, body: bytes) -> str:
    """``v1=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>``."""
    digest = hmac.new(secret, str(timestamp).encode("ascii") + b"." + body, hashlib.sha256)
    return f"{SIGNATURE_VERSION}={digest.hexdigest()}"


def signed_headers(secret: bytes, delivery: Delivery, now: float) -> dict[str, str]:
    timestamp = int(now)
    return {
        "Content-Type": "application/json",
        "DocPilot-Event": delivery.event_type,
        "DocPilot-Idempotency-Key": delivery.event_id,
        "DocPilot-Timestamp": str(timestamp),
        "DocPilot-Signature": sign(secret, timestamp, delivery.body),
        "DocPilot-Attempt": str(delivery.attempt),
    }


def turn_data(record: TurnRecord) -> dict[str, Any]:
    """What an event says about a turn: only its kind for a credential, kind and ids
    without consent, else the turn as recorded (never history or page)."""
    if record.withheld == "credential":
        return {"kind": record.kind}
    if record.withheld == "consent":
        return {"turn_id": record.turn_id, "created_ms": record.created_ms,
                "kind": record.kind, "withheld": "consent", "bundle_hash": record.bundle_hash}
    values = record.to_dict()
    return {name: values[name] for name in TURN_FIELDS}


def _envelope(key: str, event_type: str, created_ms: int, data: dict[str, Any]) -> str:
    envelope = {"id": key, "type": event_type, "created_ms": created_ms, "data": data}
    return json.dumps(envelope, ensure_ascii=False, separators=(",", ":"))


def turn_events(
    record: TurnRecord, targets: Sequence[str], not_before_ms: int | None = None
) -> list[OutboxEvent]:
    """`chat.question_asked` for every turn, and `chat.no_answer` for a refusal, one per
    receiver; ``not_before_ms`` holds them for a second opinion still to come."""
    types = [QUESTION_ASKED] + ([NO_ANSWER] if record.kind == "refusal" else [])
    data = turn_data(record)
    due = not_before_ms if not_before_ms is not None else record.created_ms
    events = []
    for event_type in types:
        key = event_key(event_type, record.turn_id)
        body = _envelope(key, event_type, record.created_ms, data)
        events += [
            OutboxEvent(key, target, event_type, record.turn_id, record.created_ms, body, due)
            for target in targets
        ]
    return events


def feedback_events(item: FeedbackRecord, targets: Sequence[str]) -> list[OutboxEvent]:
    """`chat.feedback`: each rating a reader gives is its own event (a changed mind too)."""
    key = event_key(FEEDBACK, item.turn_id, item.created_ms, item.rating)
    data = {"turn_id": item.turn_id, "rating": item.rating, "reasons": list(item.reasons),
            "note": item.note, "created_ms": item.created_ms}
    body = _envelope(key, FEEDBACK, item.created_ms, data)
    return [
        OutboxEvent(key, target, FEEDBACK, item.turn_id, item.created_ms, body, item.created_ms)
        for target in targets
    ]


class WebhookSender:
    """Delivers due outbox rows until stopped; `wake()` after new rows are written."""

    def __init__(
        self,
        settings: WebhookSettings,
        secret: bytes,
        store: Callable[[], RecordStore],
        in_db: Callable[..., Awaitable[Any]],
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.settings = settings
        self._secret = secret
        self._store = store
        self._in_db = in_db  # where blocking database calls run (the recorder's thread)
        self._client = client or httpx.AsyncClient(
            timeout=httpx.Timeout(settings.timeout), follow_redirects=False
        )
        self._own_client = client is None
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        # A claim outlives one delivery (bounded as a whole by `timeout`), so a live sender
        # never loses its row to another, and a killed sender's rows are due again soon.
        self._lease_ms = int((settings.timeout + LEASE_MARGIN_SECONDS) * 1000)
        self.delivered = 0
        self.failed_attempts = 0

    def wake(self) -> None:
        self._wake.set()

    def start(self) -> None:
        self._wake.set()  # the first pass sends what a previous run left due
        self._task = asyncio.create_task(self._run(), name="docpilot-webhooks")

    async def aclose(self) -> None:
        await stop_task(self._task)
        self._task = None
        if self._own_client:
            await self._client.aclose()

    async def _run(self) -> None:
        while True:
            try:
                wait = await self._pass()
            except Exception as exc:  # the database is away: try again shortly
                log.warning("webhooks: outbox unavailable (%s)", type(exc).__name__)
                wait = STORE_RETRY_SECONDS
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=max(wait, 0.005))
            self._wake.clear()

    async def _pass(self) -> float:
        """Deliver every row due now; returns seconds until the next one is due."""
        while True:
            store = await self._in_db(self._store)
            now_ms = int(time.time() * 1000)
            claimed = await self._in_db(claim_due, store, now_ms, self._lease_ms, BATCH)
            if not claimed:
                break
            await asyncio.gather(*(self._deliver(store, item) for item in claimed))
        due: int | None = await self._in_db(next_due_ms, store)
        if due is None:
            return IDLE_POLL_SECONDS
        return min(IDLE_POLL_SECONDS, (due - time.time() * 1000) / 1000)

    async def _deliver(self, store: RecordStore, item: Delivery) -> None:
        headers = signed_headers(self._secret, item, time.time())
        error, retry_after = "", 0.0
        try:
            # The whole attempt, not each read: a receiver trickling bytes times out too.
            async with asyncio.timeout(self.settings.timeout):
                response = await self._client.post(
                    item.target, content=item.body, headers=headers
                )
                await response.aclose()
            if 200 <= response.status_code < 300:
                await self._in_db(mark_delivered, store, item, int(time.time() * 1000))
                self.delivered += 1
                return
            error = f"HTTP {response.status_code}"
            retry_after = _retry_after(response.headers.get("retry-after", ""))
        except (httpx.TimeoutException, TimeoutError):
            error = f"no answer within {self.settings.timeout:g} s"
        except httpx.HTTPError as exc:
            error = type(exc).__name__
        self.failed_attempts += 1
        now = time.time()
        next_ms: int | None = None
        if item.attempt < self.settings.max_attempts:
            wait = max(self.settings.backoff(item.attempt), retry_after)
            next_ms = int((now + min(wait, self.settings.max_backoff_seconds)) * 1000)
        else:
            log.warning(
                "webhook %s %s to %s failed %d times (%s); given up",
                item.event_type, item.event_id, item.target, item.attempt, error,
            )
        await self._in_db(mark_attempt_failed, store, item, error, next_ms, int(now * 1000))


async def stop_task(task: asyncio.Task[None] | None) -> None:
    """Cancel a background loop and wait until it has stopped."""
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def _retry_after(value: str) -> float:
    """A receiver's ``Retry-After`` in seconds (only the delta form; dates are ignored)."""
    try:
        return max(0.0, float(value))
    except ValueError:
        return 0.0
