"""The runtime killed (SIGKILL) with records still in its spool and webhooks still in its
outbox, then started again: no record is lost or doubled, and a receiver that
deduplicates by idempotency key processes every event exactly once. Run on SQLite and on
a real PostgreSQL, against `docpilot serve` in its own process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from docpilot_runtime.records import RecordsSettings, open_store
from docpilot_runtime.records.outbox import outbox_rows
from docpilot_runtime.records.spool import Spool
from records_backends import BACKENDS, database_url, writes_blocked
from records_session import CREDENTIAL, REFUSED
from servers.processes import free_port
from servers.webhook_receiver import WebhookReceiver, wait_until

SECRET_ENV = "DOCPILOT_TEST_WEBHOOK_SECRET"
SECRET = b"restart-secret"
COVERED = "How do I exclude a page from the assistant?"
STARTUP_SECONDS = 120.0




@contextmanager
def runtime_process(site: Path, config: Path, env: dict[str, str]) -> Iterator[tuple[
        subprocess.Popen[bytes], httpx.Client]]:
    """`docpilot serve` in a process of its own, ready when /api/health answers."""
    port = free_port()
    command = [str(Path(sys.executable).with_name("docpilot")), "serve", str(site),
               "--port", str(port), "--config", str(config)]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60)
    try:
        def ready() -> bool:
            if process.poll() is not None:
                err = process.stderr.read().decode() if process.stderr else ""
                raise AssertionError(f"docpilot serve exited: {err[-2000:]}")
            try:
                return client.get("/api/health").status_code == 200
            except httpx.TransportError:
                return False

        wait_until(ready, STARTUP_SECONDS)
        yield process, client
    finally:
        client.close()
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.wait(60)
        if process.stderr:
            process.stderr.close()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    with database_url(request.param, tmp_path) as url:
        yield request.param, url


def ask(client: httpx.Client, question: str) -> dict[str, Any]:
    response = client.post("/api/ask", json={"question": question})
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def test_killed_with_queued_records_and_webhooks_a_restart_loses_and_doubles_nothing(
    example_site: Path, tmp_path: Path, backend: tuple[str, str]
) -> None:
    name, url = backend
    records = RecordsSettings(path=str(tmp_path / "records.sqlite3"))
    with WebhookReceiver(SECRET) as receiver:
        config = tmp_path / "docpilot.toml"
        config.write_text(
            f'[records]\npath = "{records.path}"\n'
            f'[webhooks]\nurls = ["{receiver.url}"]\nsecret_env = "{SECRET_ENV}"\n'
            "timeout = 5\nmax_attempts = 100\nbackoff_seconds = 0.05\nmax_backoff_seconds = 0.3\n"
            "[limits]\nanswers_per_minute = 0\nanswers_per_minute_per_client = 0\n",
            encoding="utf-8",
        )
        env = {**os.environ, SECRET_ENV: SECRET.decode()}
        env.pop("DOCPILOT_DATABASE_URL", None)
        if url:
            env["DOCPILOT_DATABASE_URL"] = url
        receiver.set_mode("down")
        spool = Spool(records.spool_folder())
        with runtime_process(example_site, config, env) as (process, client):
            # Written to the database, their events queued: the receiver is down.
            first = [ask(client, REFUSED[0]), ask(client, COVERED), ask(client, CREDENTIAL)]
            rating = {"turn_id": first[1]["turn_id"], "rating": "down", "reasons": ["unclear"]}
            assert client.post("/api/feedback", json=rating).status_code == 204
            receiver.wait_for(lambda r: len({d.key for d in r.deliveries}) == 5)
            with writes_blocked(name, url, records.sqlite_path()):
                # Answered, spooled (fsynced), not yet in the database.
                later = [ask(client, REFUSED[1]), ask(client, "hello")]
                rating = {"turn_id": later[0]["turn_id"], "rating": "up"}
                assert client.post("/api/feedback", json=rating).status_code == 204
                assert spool.depth() == 3
                process.send_signal(signal.SIGKILL)
                process.wait(30)
        store = open_store(records.sqlite_path(), url)
        try:
            queued = [row for row in outbox_rows(store) if not row["delivered_ms"]]
            assert len(queued) == 5  # the first turns' events, none delivered
            assert not any(store.has_turn(r["turn_id"]) for r in later)
        finally:
            store.close()
        # Back up, but losing its first reply to each event: every event arrives twice.
        receiver.set_mode("lose_first_reply")
        with runtime_process(example_site, config, env):
            receiver.wait_for(lambda r: len(r.processed) == 9)
            store = open_store(records.sqlite_path(), url)
            try:
                wait_until(lambda: all(row["delivered_ms"] for row in outbox_rows(store)))
                turns = store.turns()
                rows = outbox_rows(store)
            finally:
                store.close()
        assert spool.depth() == 0
    asked = [*first, *later]
    assert sorted(t["turn_id"] for t in turns) == sorted(r["turn_id"] for r in asked)
    feedback = {t["turn_id"]: t["feedback"]["rating"] for t in turns if t["feedback"]}
    assert feedback == {first[1]["turn_id"]: "down", later[0]["turn_id"]: "up"}
    assert len(rows) == 9 and all(row["attempts"] >= 2 for row in rows)
    assert receiver.bad_signatures == 0
    assert set(receiver.process_count.values()) == {1}  # each key processed once...
    per_key = Counter(d.key for d in receiver.deliveries)
    assert min(per_key.values()) >= 2  # ...though every one was delivered more than once
    types = Counter(event["type"] for event in receiver.processed.values())
    assert types == {"chat.question_asked": 5, "chat.no_answer": 2, "chat.feedback": 2}
    refused = {e["data"]["turn_id"] for e in receiver.processed.values()
               if e["type"] == "chat.no_answer"}
    assert refused == {first[0]["turn_id"], later[0]["turn_id"]}
