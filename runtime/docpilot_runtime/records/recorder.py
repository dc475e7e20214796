"""The one interface the turn calls: `Recorder.record(result, request, timings)` after the
result is final. It appends to the spool (fsynced, off the event loop) and returns; a
background task moves spooled entries into the database, retrying while it is away.
Recording never fails a turn: every error is logged by type and swallowed.

Every call on the database runs on the recorder's own thread (`in_db`), never on the
shared pool that `asyncio.to_thread` uses: a turn runs its retrieval and its spool append
there, and a database that stalls (locked, or a server that stops answering) would
otherwise take every thread of it, one waiting writer, lookup or webhook retry at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from docpilot_runtime.records.outbox import OutboxEvent, outbox_depth
from docpilot_runtime.records.rescreen import Screen, rescreen_store, screen_entry
from docpilot_runtime.records.schema import FeedbackRecord, TurnRecord, VerdictRecord
from docpilot_runtime.records.spool import Spool, read_entries
from docpilot_runtime.records.store import RecordsError, RecordStore, open_store
from docpilot_runtime.records.webhooks import WebhookSender, feedback_events, stop_task, turn_events
from docpilot_runtime.settings.records import RecordsSettings
from docpilot_runtime.settings.webhooks import WebhookSettings
from docpilot_runtime.shared.types import AskRequest, Result

log = logging.getLogger("docpilot.records")

DAY_MS = 86_400_000
RETRY_SECONDS = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
PURGE_EVERY_SECONDS = 3600.0
RECENT_TURNS = 10_000  # turn ids this process recorded, for feedback before the write
T = TypeVar("T")


@dataclass
class StageClock:
    """Milliseconds per stage, read off the turn's own events: `retrieval` ends when its
    progress event is sent, `answer` runs from its progress event to the end, and
    `first_delta` is when the first validated answer text went out."""

    started: float = field(default_factory=time.perf_counter)
    marks: dict[str, float] = field(default_factory=dict)

    def wrap(self, emit: Callable[[Any], Awaitable[None]]) -> Callable[[Any], Awaitable[None]]:
        async def timed(event: Any) -> None:
            name = event.data.get("stage") if event.name == "progress" else event.name
            if isinstance(name, str) and name not in self.marks:
                self.marks[name] = time.perf_counter()
            await emit(event)

        return timed

    def finish(self) -> dict[str, float]:
        end = time.perf_counter()
        out: dict[str, float] = {}
        if "retrieval" in self.marks:
            out["retrieval"] = self.marks["retrieval"] - self.started
        if "answer" in self.marks:
            out["answer"] = end - self.marks["answer"]
        if "delta" in self.marks:
            out["first_delta"] = self.marks["delta"] - self.started
        out["total"] = end - self.started
        return {key: round(seconds * 1000, 2) for key, seconds in out.items()}


def turn_record(
    result: Result, request: AskRequest, latency_ms: dict[str, float], settings: RecordsSettings
) -> TurnRecord:
    """What is kept of a turn. A credential turn keeps only its kind; without consent
    (when the owner requires it) nothing about the question is kept: neither its text nor
    the pages it cited or came closest to, only what the operator counts (kind, cost,
    latency)."""
    question: str | None = request.question
    withheld: Any = None
    if result.kind == "credential":
        question, withheld = None, "credential"
    elif settings.require_consent and not request.consent:
        question, withheld = None, "consent"
    usage = result.usage or {}
    cited_pages: dict[str, dict[str, str]] = {}
    for citation in result.citations:
        if citation.url:
            page = citation.url.split("#", 1)[0]
            cited_pages.setdefault(page, {"url": page, "title": citation.title})
    if result.closest:
        closest = [{"url": p.url, "title": p.title} for p in result.closest]
    else:  # the pages of the best-ranked sections (titles are not in the ranking)
        urls = dict.fromkeys(unit.split("#", 1)[0] for unit in result.ranked[:10])
        closest = [{"url": url, "title": ""} for url in list(urls)[:3]]
    cited = tuple(c.id for c in result.citations)
    if withheld == "consent":
        cited, cited_pages, closest = (), {}, []
    return TurnRecord(
        turn_id=result.turn_id,
        created_ms=int(time.time() * 1000),
        kind=result.kind,
        bundle_hash=result.bundle_hash,
        question=question,
        withheld=withheld,
        credential_kind=result.credential_kind,
        confidence=result.confidence,
        model_confidence=result.model_confidence,
        tentative=result.tentative,
        retriever=result.retriever,
        rescued=result.rescued,
        cited=cited,
        cited_pages=tuple(cited_pages.values()),
        closest=tuple(closest),
        provider=usage.get("provider"),
        model=usage.get("model"),
        input_tokens=int(usage.get("input_tokens") or 0),
        output_tokens=int(usage.get("output_tokens") or 0),
        cache_read_tokens=int(usage.get("cache_read_tokens") or 0),
        cache_write_tokens=int(usage.get("cache_write_tokens") or 0),
        cost_micro_usd=int(usage.get("cost_micro_usd") or 0),
        latency_ms=latency_ms,
    )


class Recorder:
    """Spool in front, database behind; `start` replays what a previous run left. With
    webhook receivers, every stored turn and feedback also queues its events in the
    database's outbox, in the same transaction, and a sender delivers them."""

    def __init__(
        self,
        settings: RecordsSettings,
        base: Path | None = None,
        database_url: str | None = None,
        webhooks: WebhookSettings | None = None,
        screen: Screen | None = None,
    ) -> None:
        self.settings = settings
        # The current credential check: the store is swept with it once per version (what
        # an older check missed), and spooled entries as they are written.
        self.screen = screen
        self._swept = False
        self.webhooks = webhooks if webhooks is not None and webhooks.urls else None
        self.sender: WebhookSender | None = None
        self.spool = Spool(settings.spool_folder(base))
        self._sqlite_path = settings.sqlite_path(base)
        self._database_url = database_url
        self._store: RecordStore | None = None
        # One thread for the database: its one connection serves one call at a time anyway.
        self._db_thread = ThreadPoolExecutor(1, thread_name_prefix="docpilot-records")
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        # Turn ids this process recorded, each with whether its question was withheld.
        self._recent: OrderedDict[str, bool] = OrderedDict()
        self._last_purge = 0.0
        self.written = 0  # entries moved into the database by this process

    # ---------------------------------------------------------------- the hot path

    async def record(
        self,
        result: Result,
        request: AskRequest,
        latency_ms: dict[str, float],
        awaits_verdict: bool = False,
    ) -> None:
        """Spool one finished turn; returns once it is on disk. Never raises.
        ``awaits_verdict``: a second opinion follows, so its events wait for it."""
        try:
            record = turn_record(result, request, latency_ms, self.settings)
            entry: dict[str, Any] = {"turn": record.to_dict()}
            if awaits_verdict:
                entry["awaits_verdict"] = True
            await asyncio.to_thread(self.spool.append, entry)
            self._remember(record.turn_id, record.withheld is not None)
            self._wake.set()
        except Exception as exc:
            log.error("turn %s not recorded: %s", result.turn_id, type(exc).__name__)

    async def feedback(self, item: FeedbackRecord) -> bool:
        """Spool feedback for a turn these records know; False (nothing kept) otherwise,
        so made-up turn ids cannot fill the database. On a turn whose question was
        withheld (no consent, or a credential) only the rating and reasons are kept: the
        note is the reader's own text, as the question was."""
        try:
            withheld = await self.withheld(item.turn_id)
            if withheld is None:
                return False
            if withheld and item.note:
                item = replace(item, note="")
            await asyncio.to_thread(self.spool.append, {"feedback": item.to_dict()})
            self._wake.set()
            return True
        except Exception as exc:
            log.error("feedback for %s not recorded: %s", item.turn_id, type(exc).__name__)
            return False

    async def verdict(self, item: VerdictRecord) -> None:
        """Spool a second opinion for a turn recorded earlier. Never raises."""
        try:
            await asyncio.to_thread(self.spool.append, {"verdict": item.to_dict()})
            self._wake.set()
        except Exception as exc:
            log.error("verdict for %s not recorded: %s", item.turn_id, type(exc).__name__)

    async def withheld(self, turn_id: str) -> bool | None:
        """Whether the turn's question was withheld; None when these records do not know
        the turn."""
        if turn_id in self._recent:
            return self._recent[turn_id]
        store = self._store
        if store is None:
            return None
        return await self.in_db(store.turn_withheld, turn_id)

    async def in_db(self, call: Callable[..., T], *args: Any) -> T:
        """``call(*args)``, a blocking call on the database, run on the recorder's thread."""
        return await asyncio.wrap_future(self._db_thread.submit(call, *args))

    def outbox_depth(self, timeout: float) -> int | None:
        """Events waiting in the outbox, for a caller on another thread (the metrics
        scrape); None when the database does not answer within ``timeout`` seconds."""
        asked = self._db_thread.submit(lambda: outbox_depth(self.store()))
        try:
            return asked.result(timeout)
        except Exception:
            asked.cancel()  # not started: dropped; started: left to finish on its own
            return None

    def _remember(self, turn_id: str, withheld: bool) -> None:
        self._recent[turn_id] = withheld
        while len(self._recent) > RECENT_TURNS:
            self._recent.popitem(last=False)

    # ---------------------------------------------------------------- behind it

    async def start(self) -> None:
        """Replay what an earlier run left in the spool, then keep draining it; with
        receivers, deliver the outbox. A missing signing secret raises RecordsError."""
        if self.webhooks is not None:
            try:
                secret = self.webhooks.secret()
            except ValueError as exc:
                raise RecordsError(str(exc)) from None
            self.sender = WebhookSender(self.webhooks, secret, self.store, self.in_db)
            self.sender.start()
        self._wake.set()  # the writer's first pass replays pending files
        self._task = asyncio.create_task(self._writer(), name="docpilot-records")

    async def aclose(self) -> None:
        """Stop the writer after one last drain (entries left stay spooled)."""
        await stop_task(self._task)
        self._task = None
        if self.sender is not None:
            await self.sender.aclose()  # undelivered events stay in the outbox
            self.sender = None
        try:
            await self.in_db(self.drain)
        except Exception as exc:
            log.error("records: final write failed (%s); entries stay spooled", type(exc).__name__)
        if self._store is not None:
            await self.in_db(self._store.close)
            self._store = None
        self._db_thread.shutdown(wait=False)

    async def _writer(self) -> None:
        failures = 0
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                if await self.in_db(self.drain) and self.sender is not None:
                    self.sender.wake()
                failures = 0
            except Exception as exc:
                delay = RETRY_SECONDS[min(failures, len(RETRY_SECONDS) - 1)]
                failures += 1
                log.warning(
                    "records database unavailable (%s); retrying in %.1f s",
                    type(exc).__name__,
                    delay,
                )
                await self.in_db(self._drop_store)
                await asyncio.sleep(delay)
                self._wake.set()

    def _drop_store(self) -> None:
        store, self._store = self._store, None
        if store is not None:
            with contextlib.suppress(Exception):
                store.close()

    def store(self) -> RecordStore:
        """The database, opened (and migrated) on first use and after a failure."""
        if self._store is None:
            self._store = open_store(self._sqlite_path, self._database_url)
        if self.screen is not None and not self._swept:
            rescreen_store(self._store, self.screen)
            self._swept = True
        return self._store

    def drain(self) -> int:
        """Write every spooled entry to the database (blocking); returns how many."""
        store = self.store()
        written = 0
        for path in self.spool.pending():
            entries = read_entries(path)
            if self.screen is not None:  # spooled by an older runtime, maybe
                entries = [screen_entry(entry, self.screen) for entry in entries]
            turns = [TurnRecord.from_dict(e["turn"]) for e in entries if "turn" in e]
            feedback = [FeedbackRecord.from_dict(e["feedback"]) for e in entries if "feedback" in e]
            verdicts = [VerdictRecord.from_dict(e["verdict"]) for e in entries if "verdict" in e]
            store.write(turns, feedback, self._events(entries), verdicts)
            self.spool.done(path)
            written += len(entries)
        self.written += written
        self._purge(store)
        return written

    def _events(self, entries: list[dict[str, Any]]) -> list[OutboxEvent]:
        """The webhook events of a spool file's turns and feedback, one per receiver."""
        if self.webhooks is None:
            return []
        targets, wait_ms = self.webhooks.urls, int(self.webhooks.verdict_wait * 1000)
        events: list[OutboxEvent] = []
        for entry in entries:
            if "turn" in entry:
                record = TurnRecord.from_dict(entry["turn"])
                held = record.created_ms + wait_ms if entry.get("awaits_verdict") else None
                events += turn_events(record, targets, held)
            elif "feedback" in entry:
                events += feedback_events(FeedbackRecord.from_dict(entry["feedback"]), targets)
        return events

    def _purge(self, store: RecordStore) -> None:
        days = self.settings.retention_days
        now = time.monotonic()
        if days <= 0 or (self._last_purge and now - self._last_purge < PURGE_EVERY_SECONDS):
            return
        self._last_purge = now
        removed = store.purge_before(int(time.time() * 1000) - days * DAY_MS)
        if removed:
            log.info("records: %d turn(s) past %d days removed", removed, days)
