"""The records database: a SQLite file by default, PostgreSQL when `DOCPILOT_DATABASE_URL`
is set. Both speak the statements in `schema`; this module only connects, migrates and
runs them.

Calls are blocking (the recorder runs them in a worker thread) and serialised by a lock,
so one connection serves the background writer and the feedback handler alike.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from docpilot_runtime.records.outbox import OutboxEvent, apply_verdicts, insert_events
from docpilot_runtime.records.schema import (
    DIALECT_SQL,
    INSERT_TURN,
    MIGRATIONS,
    MIGRATIONS_TABLE,
    SELECT_TURNS,
    UPSERT_FEEDBACK,
    Dialect,
    FeedbackRecord,
    TurnRecord,
    VerdictRecord,
    feedback_row,
    stored_turn,
    turn_row,
)

DATABASE_URL_ENV = "DOCPILOT_DATABASE_URL"


class RecordsError(RuntimeError):
    """The records database cannot be opened or used; the message names it."""


class RecordStore:
    """Turns and their feedback in one database, of either dialect."""

    def __init__(self, connection: Any, dialect: Dialect, where: str) -> None:
        self._db = connection
        self.dialect: Dialect = dialect
        self.where = where  # the file, or the URL without its password, for messages
        self._lock = threading.Lock()

    def _sql(self, statement: str) -> str:
        return statement.replace("?", "%s") if self.dialect == "postgres" else statement

    def sql(self, statement: str) -> str:
        """A statement written with ``?`` placeholders, in this database's spelling."""
        return self._sql(statement)

    def transaction(self) -> AbstractContextManager[Any]:
        """A cursor inside one transaction, for the modules with their own tables (outbox)."""
        return self._transaction()

    @contextmanager
    def _transaction(self) -> Iterator[Any]:
        with self._lock:
            cursor = self._db.cursor()
            try:
                if self.dialect == "sqlite":
                    cursor.execute("BEGIN IMMEDIATE")
                yield cursor
                self._db.commit()
            except BaseException:
                self._db.rollback()
                raise
            finally:
                cursor.close()

    def migrate(self) -> int:
        """Apply every migration not yet applied, in order; returns the schema version."""
        with self._transaction() as cursor:
            lock = DIALECT_SQL["lock_for_migrations"][self.dialect]
            if lock:
                cursor.execute(lock)
            cursor.execute(DIALECT_SQL["create_migrations"][self.dialect])
            cursor.execute(f"SELECT version FROM {MIGRATIONS_TABLE}")
            applied = {int(row[0]) for row in cursor.fetchall()}
            for version, statements in MIGRATIONS:
                if version in applied:
                    continue
                for statement in statements:
                    cursor.execute(statement)
                insert = f"INSERT INTO {MIGRATIONS_TABLE} (version, applied_ms) VALUES (?, ?)"
                cursor.execute(self._sql(insert), (version, int(time.time() * 1000)))
        return max(version for version, _ in MIGRATIONS)

    def write(
        self,
        turns: Sequence[TurnRecord],
        feedback: Sequence[FeedbackRecord],
        events: Sequence[OutboxEvent] = (),
        verdicts: Sequence[VerdictRecord] = (),
    ) -> None:
        """Store turns (a turn id already there is left alone), feedback (newest wins), the
        webhook events they raise and later verdicts, in one transaction: a replayed spool
        writes nothing twice, and an event exists exactly when its record does."""
        with self._transaction() as cursor:
            if turns:
                cursor.executemany(self._sql(INSERT_TURN), [turn_row(t) for t in turns])
            if feedback:
                cursor.executemany(
                    self._sql(UPSERT_FEEDBACK), [feedback_row(f) for f in feedback]
                )
            insert_events(self, cursor, events)
            apply_verdicts(self, cursor, verdicts, int(time.time() * 1000))

    def has_turn(self, turn_id: str) -> bool:
        return self.turn_withheld(turn_id) is not None

    def turn_withheld(self, turn_id: str) -> bool | None:
        """Whether the stored turn's question was withheld; None when there is no such turn."""
        with self._transaction() as cursor:
            cursor.execute(self._sql("SELECT withheld FROM turns WHERE turn_id = ?"), (turn_id,))
            row = cursor.fetchone()
            return None if row is None else row[0] is not None

    def turns(self, since_ms: int = 0) -> list[dict[str, Any]]:
        """Every turn since ``since_ms`` (oldest first), each with its `feedback` or None."""
        with self._transaction() as cursor:
            cursor.execute(self._sql(SELECT_TURNS), (since_ms,))
            return [stored_turn(tuple(row)) for row in cursor.fetchall()]

    def delete(self, turn_ids: Iterable[str]) -> int:
        """Delete turns (and their feedback) by id; returns how many turns were deleted."""
        ids = [(turn_id,) for turn_id in turn_ids]
        with self._transaction() as cursor:
            deleted = 0
            for row in ids:
                cursor.execute(self._sql("DELETE FROM turns WHERE turn_id = ?"), row)
                deleted += max(cursor.rowcount, 0)
                cursor.execute(self._sql("DELETE FROM feedback WHERE turn_id = ?"), row)
                cursor.execute(self._sql("DELETE FROM webhook_outbox WHERE turn_id = ?"), row)
            return deleted

    def purge_before(self, before_ms: int) -> int:
        """Delete every turn (and its feedback) older than ``before_ms``: retention."""
        with self._transaction() as cursor:
            for table in ("feedback", "webhook_outbox"):
                cursor.execute(
                    self._sql(
                        f"DELETE FROM {table} WHERE turn_id IN "
                        "(SELECT turn_id FROM turns WHERE created_ms < ?)"
                    ),
                    (before_ms,),
                )
            cursor.execute(self._sql("DELETE FROM turns WHERE created_ms < ?"), (before_ms,))
            return max(int(cursor.rowcount), 0)

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _redacted(url: str) -> str:
    """The URL without a password, for error messages and logs."""
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest:
        return url
    userinfo, _, host = rest.rpartition("@")
    user = userinfo.split(":", 1)[0]
    return f"{scheme}://{user}@{host}" if user else f"{scheme}://{host}"


def open_sqlite(path: str | os.PathLike[str]) -> RecordStore:
    """The SQLite file at ``path`` (made, with its folder, if missing), in WAL mode."""
    file = Path(path)
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(file, check_same_thread=False, isolation_level=None, timeout=30)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
    except (OSError, sqlite3.Error) as exc:
        raise RecordsError(f"{file}: cannot open the records database ({exc})") from None
    # isolation_level=None: transactions are ours (BEGIN IMMEDIATE ... COMMIT).
    store = RecordStore(_SqliteConnection(db), "sqlite", str(file))
    store.migrate()
    return store


class _SqliteConnection:
    """sqlite3 in autocommit mode with explicit BEGIN, shaped like a DB-API connection."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def cursor(self) -> sqlite3.Cursor:
        return self._db.cursor()

    def commit(self) -> None:
        if self._db.in_transaction:
            self._db.execute("COMMIT")

    def rollback(self) -> None:
        if self._db.in_transaction:
            self._db.execute("ROLLBACK")

    def close(self) -> None:
        self._db.close()


def open_postgres(url: str) -> RecordStore:
    """PostgreSQL at ``url`` (psycopg 3, the `postgres` extra)."""
    try:
        import psycopg
    except ImportError:
        raise RecordsError(
            f"{DATABASE_URL_ENV} is set but psycopg is not installed: "
            "pip install 'mkdocs-docpilot[postgres]'"
        ) from None
    try:
        db = psycopg.connect(url, connect_timeout=10)
    except psycopg.Error as exc:
        raise RecordsError(f"{_redacted(url)}: cannot connect to PostgreSQL ({exc})") from None
    store = RecordStore(db, "postgres", _redacted(url))
    store.migrate()
    return store


def open_store(sqlite_path: str | os.PathLike[str], database_url: str | None = None) -> RecordStore:
    """PostgreSQL when a URL is given (or `DOCPILOT_DATABASE_URL` is set), else SQLite."""
    url = database_url if database_url is not None else os.environ.get(DATABASE_URL_ENV, "")
    return open_postgres(url) if url else open_sqlite(sqlite_path)
