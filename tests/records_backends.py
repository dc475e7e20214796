"""The records databases the record tests run against: a SQLite file and a real PostgreSQL.

`scripts/test.sh` starts PostgreSQL (scripts/postgres.sh) and exports
`DOCPILOT_TEST_POSTGRES_URL`. Without it a PostgreSQL test fails, with the command that
fixes it: a missing database is a failure, never a skip. Each test gets its own fresh
database on that server, dropped afterwards.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

POSTGRES_ENV = "DOCPILOT_TEST_POSTGRES_URL"
BACKENDS = ["sqlite", "postgres"]


def postgres_url() -> str:
    url = os.environ.get(POSTGRES_ENV, "")
    if not url:
        pytest.fail(
            f"{POSTGRES_ENV} is not set: the record tests also run on PostgreSQL. Run them "
            "through scripts/test.sh, or start one with "
            f'`export {POSTGRES_ENV}="$(bash scripts/postgres.sh start)"`'
        )
    return url


@contextmanager
def fresh_postgres_database() -> Iterator[str]:
    """A new, empty database on the test server; its URL for the block's duration."""
    import psycopg

    base = postgres_url()
    name = f"docpilot_{uuid.uuid4().hex[:12]}"
    try:
        admin = psycopg.connect(base, autocommit=True, connect_timeout=10)
    except psycopg.OperationalError as exc:
        pytest.fail(f"PostgreSQL at {base} is not reachable ({exc}); start it with "
                    "`bash scripts/postgres.sh start`")
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield base.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(base, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def database_url(backend: str, tmp_path: Path) -> Iterator[str]:
    """"" for SQLite (the settings' file is used), else a fresh PostgreSQL database URL."""
    if backend == "sqlite":
        yield ""
    else:
        with fresh_postgres_database() as url:
            yield url


@contextmanager
def writes_blocked(backend: str, url: str, sqlite_file: Path) -> Iterator[None]:
    """Hold the records database's write lock from another connection, so every call of
    the runtime's that writes (or, on PostgreSQL, reads) its tables waits."""
    if backend == "sqlite":
        db = sqlite3.connect(sqlite_file, isolation_level=None)
        db.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            db.execute("ROLLBACK")
            db.close()
    else:
        import psycopg

        with psycopg.connect(url) as db:
            db.execute("LOCK TABLE turns, feedback, webhook_outbox IN ACCESS EXCLUSIVE MODE")
            try:
                yield
            finally:
                db.rollback()
