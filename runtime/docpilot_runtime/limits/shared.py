"""Rate caps and the daily spend bound shared by every process that serves one site.

`DatabaseCaps` is the `Caps` of `caps.py` kept in the records database: the SQLite file
of `[records]` (several worker processes on one host, e.g. ``uvicorn --workers 4``) or
PostgreSQL when `DOCPILOT_DATABASE_URL` is set (several hosts). The buckets are the
same token buckets as `MemoryCaps`, one row per key; each admission reads and updates
the client's and the site's rows in one transaction, so two processes can never both
take a site's last token.

Time is the wall clock (processes share no monotonic clock), so hosts need synchronised
clocks; a clock that steps back only refills nothing.

When the database cannot be reached, caps fall back to this process's `MemoryCaps` (the
site keeps answering; each process then counts alone) and the database is tried again
after ``RETRY_SECONDS``. The tables are this module's own (``cap_buckets``,
``cap_spend``, ``cap_holds``: the estimates model calls hold until they settle), made on
first use, apart from the records' migrations.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docpilot_runtime.limits.caps import (
    HOLD_SECONDS,
    WINDOW_SECONDS,
    Admission,
    MemoryCaps,
    SpendHold,
    utc_day,
)
from docpilot_runtime.records.store import DATABASE_URL_ENV, _SqliteConnection
from docpilot_runtime.settings.limits import LimitSettings

log = logging.getLogger("docpilot.caps")

RETRY_SECONDS = 5.0  # after a database failure, memory caps for this long
CONNECT_TIMEOUT = 3  # seconds; an unreachable database must not hold a reader up
BUSY_TIMEOUT = 2.0  # seconds a SQLite admission waits for another writer before memory caps
PURGE_EVERY = 500  # admissions between deletions of idle buckets

TABLES = (
    "CREATE TABLE IF NOT EXISTS cap_buckets ("
    "key TEXT PRIMARY KEY, tokens DOUBLE PRECISION NOT NULL, "
    "updated DOUBLE PRECISION NOT NULL)",
    "CREATE TABLE IF NOT EXISTS cap_spend (day TEXT PRIMARY KEY, micro_usd BIGINT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS cap_holds (id TEXT PRIMARY KEY, day TEXT NOT NULL, "
    "micro_usd BIGINT NOT NULL, taken DOUBLE PRECISION NOT NULL)",
)
# Serialise holds, and the tables' creation, between processes on PostgreSQL (SQLite's
# BEGIN IMMEDIATE does there): two CREATE TABLE IF NOT EXISTS at once can collide.
HOLD_LOCK = "SELECT pg_advisory_xact_lock(727572)"
TABLES_LOCK = "SELECT pg_advisory_xact_lock(727573)"
ADD_SPEND = (
    "INSERT INTO cap_spend (day, micro_usd) VALUES (?, ?) "
    "ON CONFLICT (day) DO UPDATE SET micro_usd = cap_spend.micro_usd + excluded.micro_usd"
)


@dataclass(frozen=True)
class Bucket:
    """One cap to take a token from: its row key and its size per minute."""

    key: str
    per_minute: int
    name: str  # "client", "site" or "calls": what a refusal names


def refilled(tokens: float, updated: float, per_minute: int, now: float) -> float:
    """A bucket's tokens at ``now``; a clock that went back refills nothing."""
    elapsed = max(0.0, now - updated)
    return min(float(per_minute), tokens + elapsed * per_minute / WINDOW_SECONDS)


class _Database:
    """One connection (SQLite or PostgreSQL) and the transactions the caps need."""

    def __init__(self, connection: Any, dialect: str, where: str) -> None:
        self._db = connection
        self.dialect = dialect
        self.where = where
        self._lock = threading.Lock()

    def sql(self, statement: str) -> str:
        return statement.replace("?", "%s") if self.dialect == "postgres" else statement

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Any]:
        with self._lock:
            cursor = self._db.cursor()
            try:
                if self.dialect == "sqlite":
                    cursor.execute("BEGIN IMMEDIATE")  # the write lock first: no lost update
                yield cursor
                self._db.commit()
            except BaseException:
                with contextlib.suppress(Exception):
                    self._db.rollback()
                raise
            finally:
                with contextlib.suppress(Exception):
                    cursor.close()

    def close(self) -> None:
        with self._lock, contextlib.suppress(Exception):
            self._db.close()


def open_database(sqlite_path: Path, database_url: str = "") -> _Database:
    """The caps' connection: PostgreSQL at ``database_url``, else the SQLite file (WAL)."""
    if database_url:
        import psycopg

        db: _Database = _Database(
            psycopg.connect(database_url, connect_timeout=CONNECT_TIMEOUT), "postgres", "postgres"
        )
    else:
        sqlite_path.parent.mkdir(parents=True, exist_ok=True)
        lite = sqlite3.connect(
            sqlite_path, check_same_thread=False, isolation_level=None, timeout=BUSY_TIMEOUT
        )
        lite.execute("PRAGMA journal_mode=WAL")
        lite.execute("PRAGMA synchronous=NORMAL")
        db = _Database(_SqliteConnection(lite), "sqlite", str(sqlite_path))
    try:
        with db.transaction() as cursor:
            if db.dialect == "postgres":  # processes starting together make them once
                cursor.execute(TABLES_LOCK)
            for statement in TABLES:
                cursor.execute(statement)
    except BaseException:
        db.close()  # a connection whose tables failed is not kept, nor left open
        raise
    return db


class DatabaseCaps:
    """`Caps` in the records database, shared by every process that opens the same one."""

    def __init__(
        self,
        settings: LimitSettings,
        sqlite_path: str | os.PathLike[str],
        database_url: str | None = None,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.sqlite_path = Path(sqlite_path)
        self.database_url = (
            database_url if database_url is not None else os.environ.get(DATABASE_URL_ENV, "")
        )
        self.wall = wall
        self.fallback = MemoryCaps(settings, wall=wall)  # while the database is away
        self._db: _Database | None = None
        self._failed_at: float | None = None
        self._admissions = 0
        self._open_lock = threading.Lock()

    # ------------------------------------------------------------- the Caps interface

    async def admit(self, site: str, client: str) -> Admission:
        # The client's cap comes first and a refusal takes nothing: as in MemoryCaps.
        buckets = [
            Bucket(f"client:{client}", self.settings.answers_per_minute_per_client, "client"),
            Bucket(f"site:{site}", self.settings.answers_per_minute, "site"),
        ]
        active = [b for b in buckets if b.per_minute > 0]
        if not active:
            return Admission(True)
        shared: Admission | None = await self._shared(self._take, active)
        return shared if shared is not None else await self.fallback.admit(site, client)

    async def admit_calls(self, client: str, per_minute: int) -> Admission:
        """One tool call (MCP) against the client's call cap (its own buckets)."""
        if per_minute <= 0:
            return Admission(True)
        bucket = Bucket(f"calls:{client}", per_minute, "calls")
        shared: Admission | None = await self._shared(self._take, [bucket])
        if shared is not None:
            return shared
        return await self.fallback.admit_calls(client, per_minute)

    async def spend_exhausted(self) -> bool:
        bound = self.settings.daily_spend_micro_usd
        if bound <= 0:
            return False
        spent = await self._shared(self._spent)
        if spent is None:
            return await self.fallback.spend_exhausted()
        return bool(spent >= bound)

    async def record_spend(self, micro_usd: int) -> None:
        if micro_usd <= 0:
            return
        await self.fallback.record_spend(micro_usd)  # kept too, for a database outage
        await self._shared(self._add_spend, micro_usd)

    async def hold_spend(self, micro_usd: int) -> SpendHold | None:
        hold = SpendHold.of(micro_usd, utc_day(self.wall()))
        granted = await self._shared(self._hold, hold)
        if granted is None:  # the database is away: this process holds alone
            return await self.fallback.hold_spend(micro_usd)
        return hold if granted else None

    async def settle_spend(self, hold: SpendHold, micro_usd: int) -> None:
        await self.fallback.settle_spend(hold, micro_usd)  # kept too, for a database outage
        await self._shared(self._settle, hold, micro_usd)

    async def aclose(self) -> None:
        db, self._db = self._db, None
        if db is not None:
            await asyncio.to_thread(db.close)

    # ------------------------------------------------------------- the database side

    async def _shared(self, work: Callable[..., Any], *args: Any) -> Any:
        """``work(db, *args)`` in a worker thread; None when the database is unavailable."""
        if self._failed_at is not None and self.wall() - self._failed_at < RETRY_SECONDS:
            return None
        try:
            return await asyncio.to_thread(self._run, work, *args)
        except Exception as exc:
            if self._failed_at is None:
                log.warning(
                    "caps database unavailable (%s); counting in this process until it is back",
                    type(exc).__name__,
                )
            self._failed_at = self.wall()
            db, self._db = self._db, None
            if db is not None:
                db.close()
            return None

    def _run(self, work: Callable[..., Any], *args: Any) -> Any:
        with self._open_lock:
            if self._db is None:
                self._db = open_database(self.sqlite_path, self.database_url)
            db = self._db
        result = work(db, *args)
        if self._failed_at is not None:
            log.info("caps database is back; caps are shared again")
            self._failed_at = None
        return result

    def _take(self, db: _Database, buckets: list[Bucket]) -> Admission:
        now = self.wall()
        ordered = sorted(buckets, key=lambda b: b.key)  # one lock order: no deadlock
        with db.transaction() as cursor:
            for bucket in ordered:
                cursor.execute(
                    db.sql(
                        "INSERT INTO cap_buckets (key, tokens, updated) VALUES (?, ?, ?) "
                        "ON CONFLICT (key) DO NOTHING"
                    ),
                    (bucket.key, float(bucket.per_minute), now),
                )
            lock = " FOR UPDATE" if db.dialect == "postgres" else ""
            marks = ", ".join("?" for _ in ordered)
            cursor.execute(
                db.sql(
                    f"SELECT key, tokens, updated FROM cap_buckets WHERE key IN ({marks}) "
                    f"ORDER BY key{lock}"
                ),
                [b.key for b in ordered],
            )
            rows = {str(key): (float(tokens), float(updated)) for key, tokens, updated in cursor}
            tokens = {
                b.key: refilled(*rows.get(b.key, (float(b.per_minute), now)), b.per_minute, now)
                for b in buckets
            }
            waits = {
                b.name: (1.0 - tokens[b.key]) * WINDOW_SECONDS / b.per_minute
                for b in buckets
                if tokens[b.key] < 1.0
            }
            if waits:
                cap = max(waits, key=lambda name: waits[name])
                return Admission(False, max(1, math.ceil(waits[cap])), cap)
            for bucket in ordered:
                cursor.execute(
                    db.sql("UPDATE cap_buckets SET tokens = ?, updated = ? WHERE key = ?"),
                    (tokens[bucket.key] - 1.0, now, bucket.key),
                )
            self._admissions += 1
            if self._admissions % PURGE_EVERY == 0:
                # An idle bucket is full again: the same as no row. Bounds the table.
                cursor.execute(
                    db.sql("DELETE FROM cap_buckets WHERE updated < ?"), (now - WINDOW_SECONDS,)
                )
        return Admission(True)

    def _spent(self, db: _Database) -> int:
        with db.transaction() as cursor:
            cursor.execute(
                db.sql("SELECT micro_usd FROM cap_spend WHERE day = ?"), (utc_day(self.wall()),)
            )
            row = cursor.fetchone()
        return int(row[0]) if row else 0

    def _add_spend(self, db: _Database, micro_usd: int) -> None:
        with db.transaction() as cursor:
            cursor.execute(db.sql(ADD_SPEND), (utc_day(self.wall()), int(micro_usd)))

    def _hold(self, db: _Database, hold: SpendHold) -> bool:
        """Take ``hold`` unless today's spend and every live hold have reached the cap."""
        now = self.wall()
        bound = self.settings.daily_spend_micro_usd
        with db.transaction() as cursor:
            if db.dialect == "postgres":
                cursor.execute(HOLD_LOCK)
            cursor.execute(db.sql("DELETE FROM cap_holds WHERE taken < ?"), (now - HOLD_SECONDS,))
            cursor.execute(db.sql("SELECT micro_usd FROM cap_spend WHERE day = ?"), (hold.day,))
            row = cursor.fetchone()
            spent = int(row[0]) if row else 0
            cursor.execute(
                db.sql("SELECT COALESCE(SUM(micro_usd), 0) FROM cap_holds WHERE day = ?"),
                (hold.day,),
            )
            held = int(cursor.fetchone()[0])
            if bound > 0 and spent + held >= bound:
                return False
            cursor.execute(
                db.sql("INSERT INTO cap_holds (id, day, micro_usd, taken) VALUES (?, ?, ?, ?)"),
                (hold.id, hold.day, hold.micro_usd, now),
            )
        return True

    def _settle(self, db: _Database, hold: SpendHold, micro_usd: int) -> None:
        """Release ``hold`` and add what its call cost, in one transaction."""
        with db.transaction() as cursor:
            cursor.execute(db.sql("DELETE FROM cap_holds WHERE id = ?"), (hold.id,))
            if micro_usd > 0:
                cursor.execute(db.sql(ADD_SPEND), (hold.day, int(micro_usd)))


__all__ = ["DatabaseCaps", "open_database", "refilled"]
