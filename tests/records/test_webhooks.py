"""Webhooks: signed events from the records' outbox, delivered at least once to a real
receiver on loopback, retried with backoff when it is down or too slow, bounded by
`max_attempts`; a credential turn's event carries only its kind."""

from __future__ import annotations

import asyncio
import os
import random
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from corpora import ROOT
from docpilot_runtime.records import (
    Recorder,
    RecordsError,
    RecordsSettings,
    TurnRecord,
    open_store,
)
from docpilot_runtime.records.export import open_records
from docpilot_runtime.records.outbox import outbox_rows
from docpilot_runtime.records.spool import Spool
from docpilot_runtime.records.webhooks import event_key, sign, turn_data, turn_events
from docpilot_runtime.serve.app import create_app
from docpilot_runtime.settings.load import Settings, SettingsError, load_settings
from docpilot_runtime.settings.webhooks import WebhookSettings
from records_session import CREDENTIAL, REFUSED
from servers.runtime import NO_CAPS, serve_app
from servers.webhook_receiver import WebhookReceiver, verify, wait_until

SECRET_ENV = "DOCPILOT_TEST_WEBHOOK_SECRET"
SECRET = b"s3cret-shared-with-the-receiver"
COVERED = "How do I exclude a page from the assistant?"




@pytest.fixture
def secret(monkeypatch: pytest.MonkeyPatch) -> bytes:
    monkeypatch.setenv(SECRET_ENV, SECRET.decode())
    return SECRET


def hooked(tmp_path: Path, url: str, **webhooks: Any) -> Settings:
    options = {"secret_env": SECRET_ENV, "backoff_seconds": 0.05, "max_backoff_seconds": 0.2,
               **webhooks}
    return Settings(
        caps=NO_CAPS,
        records=RecordsSettings(path=str(tmp_path / "records.sqlite3")),
        webhooks=WebhookSettings(urls=(url,), **options),
    )


def settled_rows(settings: Settings, done: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
    """The outbox rows, once every row satisfies ``done`` (polled, with a deadline)."""
    store = open_store(settings.records.sqlite_path())
    try:
        wait_until(lambda: bool(outbox_rows(store)) and all(map(done, outbox_rows(store))))
        return outbox_rows(store)
    finally:
        store.close()


@pytest.fixture
def receiver(secret: bytes) -> Iterator[WebhookReceiver]:
    with WebhookReceiver(secret) as running:
        yield running


# ---------------------------------------------------------------- the pieces


def test_the_signature_is_hmac_sha256_over_timestamp_dot_body() -> None:
    body = b'{"id":"k","type":"chat.feedback"}'
    signature = sign(SECRET, 1_700_000_000, body)
    import hashlib
    import hmac

    expected = hmac.new(SECRET, b"1700000000." + body, hashlib.sha256).hexdigest()
    assert signature == f"v1={expected}"
    now = str(int(time.time()))
    good = {"docpilot-timestamp": now, "docpilot-signature": sign(SECRET, int(now), body)}
    assert verify(SECRET, good, body)
    assert not verify(SECRET, good, body + b" ")  # a changed body fails
    assert not verify(b"another secret", good, body)
    old = {"docpilot-timestamp": "1700000000", "docpilot-signature": signature}
    assert not verify(SECRET, old, body)  # a replayed old delivery fails the clock check


def test_backoff_doubles_from_the_first_wait_with_jitter_and_is_capped() -> None:
    settings = WebhookSettings(backoff_seconds=1.0, max_backoff_seconds=10.0)
    rng = random.Random(7)
    waits = [[settings.backoff(n, rng) for _ in range(200)] for n in (1, 2, 3, 8)]
    for wait, ceiling in zip(waits, (1.0, 2.0, 4.0, 10.0), strict=True):
        assert all(ceiling / 2 <= w <= ceiling for w in wait)
        assert max(wait) - min(wait) > ceiling / 4  # jittered, not one fixed value


def test_a_credential_turn_event_carries_only_its_kind() -> None:
    record = TurnRecord("t1", 1, "credential", "b1", withheld="credential",
                        credential_kind="github_token")
    assert turn_data(record) == {"kind": "credential"}
    events = turn_events(record, ["http://r.example/"])
    assert [e.event_type for e in events] == ["chat.question_asked"]
    assert "t1" not in events[0].body and "github" not in events[0].body


def test_without_consent_an_event_says_nothing_of_the_question() -> None:
    record = TurnRecord("t2", 1, "refusal", "b1", withheld="consent")
    data = turn_data(record)
    assert data["withheld"] == "consent" and "question" not in data and "closest" not in data
    types = [e.event_type for e in turn_events(record, ["http://r.example/"])]
    assert types == ["chat.question_asked", "chat.no_answer"]


def test_the_idempotency_key_is_stable_and_distinct_per_event() -> None:
    assert event_key("chat.question_asked", "t1") == event_key("chat.question_asked", "t1")
    assert event_key("chat.question_asked", "t1") != event_key("chat.no_answer", "t1")


@pytest.mark.parametrize(
    ("table", "key"),
    [
        ('urls = ["ftp://x"]\nsecret_env = "S"', "urls"),
        ('urls = ["https://hooks.example/a"]', "secret_env"),
        ('secret_env = "has space"', "secret_env"),
        ("max_attempts = 0", "max_attempts"),
        ("timeout = 0", "timeout"),
    ],
)
def test_bad_webhook_settings_name_the_file_and_key(tmp_path: Path, table: str, key: str) -> None:
    config = tmp_path / "docpilot.toml"
    config.write_text(f"[webhooks]\n{table}\n", encoding="utf-8")
    with pytest.raises(SettingsError) as caught:
        load_settings(config)
    assert str(config) in str(caught.value) and key in str(caught.value)


def test_a_missing_secret_variable_stops_the_recorder_from_starting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SECRET_ENV, raising=False)
    settings = hooked(tmp_path, "http://127.0.0.1:9/")
    recorder = Recorder(settings.records, webhooks=settings.webhooks)
    with pytest.raises(RecordsError) as caught:
        asyncio.run(recorder.start())
    assert SECRET_ENV in str(caught.value) and "secret_env" in str(caught.value)


# ---------------------------------------------------------------- over real HTTP


def test_events_are_signed_retried_while_the_receiver_is_down_and_processed_once(
    example_site: Path, tmp_path: Path, receiver: WebhookReceiver
) -> None:
    receiver.set_mode("down")
    settings = hooked(tmp_path, receiver.url)
    with serve_app(create_app(example_site, settings)) as live, httpx.Client(
        base_url=live.base_url, timeout=60
    ) as client:
        refused = client.post("/api/ask", json={"question": REFUSED[0]}).json()
        found = client.post("/api/ask", json={"question": COVERED}).json()
        credential = client.post("/api/ask", json={"question": CREDENTIAL}).json()
        rating = {"turn_id": found["turn_id"], "rating": "up"}
        assert client.post("/api/feedback", json=rating).status_code == 204
        # Down: every event is tried and refused at least twice, nothing is processed.
        receiver.wait_for(lambda r: len({d.key for d in r.deliveries if d.attempt >= 2}) == 5)
        assert not receiver.processed
        receiver.set_mode("lose_first_reply")
        receiver.wait_for(lambda r: len(r.processed) == 5
                          and all(d.attempt >= 1 for d in r.deliveries))
        # Each key is retried after its lost reply, until the sender hears a 2xx.
        rows = settled_rows(settings, lambda row: bool(row["delivered_ms"]))
    assert receiver.bad_signatures == 0
    assert len(rows) == 5 and all(row["attempts"] >= 3 for row in rows)
    assert max(receiver.process_count.values()) == 1
    events = list(receiver.processed.values())
    by_type: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        by_type.setdefault(event["type"], []).append(event["data"])
    assert sorted(by_type) == ["chat.feedback", "chat.no_answer", "chat.question_asked"]
    asked = {d.get("turn_id") for d in by_type["chat.question_asked"]}
    assert asked == {refused["turn_id"], found["turn_id"], None}
    assert {"kind": "credential"} in by_type["chat.question_asked"]
    assert credential["turn_id"] not in str(events)
    assert [d["turn_id"] for d in by_type["chat.no_answer"]] == [refused["turn_id"]]
    assert by_type["chat.no_answer"][0]["question"] == REFUSED[0]
    assert by_type["chat.feedback"] == [
        {**by_type["chat.feedback"][0], "turn_id": found["turn_id"], "rating": "up"}
    ]


def test_a_receiver_that_times_out_is_retried_then_given_up_after_max_attempts(
    example_site: Path, tmp_path: Path, receiver: WebhookReceiver
) -> None:
    receiver.set_mode("stall")
    settings = hooked(tmp_path, receiver.url, timeout=0.3, max_attempts=3)
    with serve_app(create_app(example_site, settings)) as live, httpx.Client(
        base_url=live.base_url, timeout=60
    ) as client:
        client.post("/api/ask", json={"question": "hello"})
        [row] = settled_rows(settings, lambda row: bool(row["failed_ms"]))
    assert row["attempts"] == 3 and row["delivered_ms"] is None
    assert "0.3 s" in row["last_error"]
    assert [d.attempt for d in receiver.deliveries] == [1, 2, 3]  # bounded: no fourth
    assert len({d.key for d in receiver.deliveries}) == 1
    assert not receiver.processed


def test_a_receiver_slow_once_gets_the_event_again_and_processes_it_once(
    example_site: Path, tmp_path: Path, receiver: WebhookReceiver
) -> None:
    receiver.set_mode("stall")
    settings = hooked(tmp_path, receiver.url, timeout=0.3, max_attempts=5)
    with serve_app(create_app(example_site, settings)) as live, httpx.Client(
        base_url=live.base_url, timeout=60
    ) as client:
        client.post("/api/ask", json={"question": "hello"})
        receiver.wait_for(lambda r: len(r.deliveries) >= 1)
        receiver.set_mode("ok")  # the next attempt is answered in time
        receiver.wait_for(lambda r: len(r.processed) == 1)
        [row] = settled_rows(settings, lambda row: bool(row["delivered_ms"]))
    assert row["attempts"] >= 2 and row["failed_ms"] is None
    assert list(receiver.process_count.values()) == [1]


# ---------------------------------------------------------------- the documented receiver

GUIDE = ROOT / "example-site/docs/guides/records-and-reports.md"


def documented_receiver(port: int) -> str:
    """The receiver example of the records guide, bound to ``port`` on loopback."""
    text = GUIDE.read_text(encoding="utf-8")
    block = re.search(r"```python\n(.*?)```", text[text.index("## Webhooks"):], re.S)
    assert block is not None, f"{GUIDE}: the webhooks section lost its receiver example"
    code = block.group(1)
    assert '("0.0.0.0", 8080)' in code
    return code.replace('("0.0.0.0", 8080)', f'("127.0.0.1", {port})')


def test_the_documented_receiver_checks_signatures_and_skips_repeats(
    example_site: Path, tmp_path: Path, secret: bytes
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "DOCPILOT_WEBHOOK_SECRET": secret.decode()}
    process = subprocess.Popen([sys.executable, "-u", "-c", documented_receiver(port)],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    try:
        def listening() -> bool:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    return True
            except OSError:
                return False

        wait_until(listening, 30)
        settings = hooked(tmp_path, url)
        with serve_app(create_app(example_site, settings)) as live, httpx.Client(
            base_url=live.base_url, timeout=60
        ) as client:
            client.post("/api/ask", json={"question": REFUSED[0]})
            rows = settled_rows(settings, lambda row: bool(row["delivered_ms"]))
        body = b'{"id":"k1","type":"chat.feedback","data":{"turn_id":"t"}}'
        stamp = int(time.time())
        headers = {"DocPilot-Timestamp": str(stamp), "DocPilot-Idempotency-Key": "k1",
                   "DocPilot-Signature": sign(secret, stamp, body)}
        replies = [httpx.post(url, content=body, headers=headers).status_code for _ in "12"]
        forged = {**headers, "DocPilot-Signature": sign(b"guessed", stamp, body)}
        refused = httpx.post(url, content=body, headers=forged).status_code
    finally:
        process.terminate()
        output, _ = process.communicate(timeout=30)
    assert len(rows) == 2 and replies == [204, 204] and refused == 401
    lines = output.decode().splitlines()
    # The runtime's two events (posted concurrently), then the hand-signed one just once.
    assert sorted(lines[:2]) == [f"chat.no_answer {REFUSED[0]}", f"chat.question_asked {REFUSED[0]}"]
    assert lines[2:] == ["chat.feedback None"]


def test_draining_the_spool_from_the_cli_queues_the_events_it_holds(tmp_path: Path) -> None:
    settings = hooked(tmp_path, "http://127.0.0.1:9/")
    record = TurnRecord("t-left", int(time.time() * 1000), "refusal", "b1", question="q?")
    Spool(settings.records.spool_folder()).append({"turn": record.to_dict()})
    store = open_records(settings.records, webhooks=settings.webhooks)  # as `docpilot report`
    try:
        rows = outbox_rows(store)
        assert store.has_turn("t-left")
    finally:
        store.close()
    assert sorted(row["event_type"] for row in rows) == ["chat.no_answer", "chat.question_asked"]
    assert all(row["attempts"] == 0 and row["delivered_ms"] is None for row in rows)


def test_a_spool_file_replayed_after_its_write_queues_no_second_event(tmp_path: Path) -> None:
    """A crash after the database commit but before the spool file is deleted: the next
    start replays the same entries, and the same keys make the replay add nothing."""
    settings = hooked(tmp_path, "http://127.0.0.1:9/")
    spool = Spool(settings.records.spool_folder())
    now = int(time.time() * 1000)
    spool.append({"turn": TurnRecord("t-twice", now, "refusal", "b1", question="q?").to_dict()})
    spool.append({"feedback": {"turn_id": "t-twice", "created_ms": now, "rating": "down"}})
    taken = spool.take()
    assert taken is not None
    kept = taken.read_bytes()
    recorder = Recorder(settings.records, webhooks=settings.webhooks)
    assert recorder.drain() == 2
    first = outbox_rows(recorder.store())
    (spool.folder / f"0-replayed{taken.suffix}").write_bytes(kept)  # the unlink was lost
    assert recorder.drain() == 2
    again = outbox_rows(recorder.store())
    recorder.store().close()
    assert len(first) == 3 and again == first


# ---------------------------------------------------------------- several senders


CLAIMERS = 4


def claim_everything(sqlite_path: str, database_url: str, start: Any) -> list[tuple[str, str]]:
    """One sender process: once every sender is ready (``start``, a barrier), claims due
    rows (a long lease), posts them (a short pause stands in for the HTTP calls) and marks
    them delivered, as `WebhookSender` does, until the outbox is empty; returns the
    (event id, receiver) of every row it claimed."""
    from docpilot_runtime.records.outbox import claim_due, mark_delivered, outbox_depth

    store = open_store(sqlite_path, database_url)
    try:
        start.wait()
        claimed: list[tuple[str, str]] = []
        while outbox_depth(store):
            batch = claim_due(store, int(time.time() * 1000), 600_000, 3)
            time.sleep(0.01)  # the posts, during which the other senders claim
            for delivery in batch:
                mark_delivered(store, delivery, int(time.time() * 1000))
            claimed += [(d.event_id, d.target) for d in batch]
        return claimed
    finally:
        store.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_senders_in_several_processes_never_claim_the_same_row(
    tmp_path: Path, backend: str
) -> None:
    """`serve --workers N` runs one sender per process over one outbox: each row is
    claimed by exactly one of them (the conditional UPDATE is the lock)."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import Manager

    from docpilot_runtime.records.outbox import outbox_rows
    from records_backends import database_url

    now = int(time.time() * 1000) - 1000
    targets = ("http://127.0.0.1:9/a", "http://127.0.0.1:9/b")
    records = [TurnRecord(turn_id=f"t-{i}", created_ms=now, kind="refusal", bundle_hash="b1",
                          question=f"question {i}") for i in range(60)]
    events = [e for r in records for e in turn_events(r, targets)]
    path = str(tmp_path / "records.sqlite3")
    with database_url(backend, tmp_path) as url:
        store = open_store(path, url)
        try:
            store.write(records, [], events)
            expected = {(row["event_id"], row["target"]) for row in outbox_rows(store)}
        finally:
            store.close()
        assert len(expected) == len(events) == 240
        with Manager() as manager, ProcessPoolExecutor(CLAIMERS) as pool:
            start = manager.Barrier(CLAIMERS)
            runs = list(pool.map(claim_everything, [path] * CLAIMERS, [url] * CLAIMERS,
                                 [start] * CLAIMERS))
    claimed = [pair for run in runs for pair in run]
    assert sorted(claimed) == sorted(expected)  # every row once: none twice, none left
    assert sum(1 for run in runs if run) >= 2  # the processes really did share the work
