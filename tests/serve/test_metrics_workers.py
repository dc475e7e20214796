"""`/metrics` of a real `docpilot serve --workers 2`: turns answered by both workers, and
every scrape, whichever worker answers it, reports the total of both (so the counters
never go backwards between scrapes); the queue depths, read from the spool and the
database both workers share, are one value on either worker, not a sum. Which worker
holds a connection is read from /proc, so the test knows the turns and the scrapes
reached both. The start's metrics folder is a fresh one (an earlier run's counts in the
owner's folder never add in) and is gone after the runtime stops."""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from http.client import HTTPConnection
from pathlib import Path

import pytest
from prometheus_client.mmap_dict import MmapedDict, mmap_key
from prometheus_client.parser import text_string_to_metric_families
from servers.openai_chat import OpenAIChatServer, answer_reply
from servers.processes import ServeProcess, serving_pid
from servers.webhook_receiver import WebhookReceiver

COVERED = "How do I exclude a page from the assistant?"
SECRET_ENV = "DOCPILOT_TEST_WEBHOOK_SECRET"
TURNS_PER_WORKER = 3
DEADLINE_SECONDS = 180.0  # the second worker loads its embedder on a busy 2-core machine
MAX_TURNS = 200

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="which worker holds a connection is read from /proc")


def totals(text: str) -> tuple[float, float]:
    """(turns of every kind, total-stage observations) in one exposition."""
    turns = stages = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "docpilot_turns_total":
                turns += sample.value
            elif sample.name == "docpilot_stage_seconds_count" and sample.labels == {
                "stage": "total"
            }:
                stages += sample.value
    return turns, stages


def depths(text: str) -> dict[str, float]:
    """The queue-depth samples of one exposition, by queue."""
    found: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "docpilot_queue_depth":
                assert sample.labels["queue"] not in found, "one sample per queue"
                found[sample.labels["queue"]] = sample.value
    return found


def call(connection: HTTPConnection, method: str, path: str, body: dict | None = None
         ) -> tuple[int, str]:
    payload = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"} if body is not None else {}
    connection.request(method, path, body=payload, headers=headers)
    response = connection.getresponse()
    return response.status, response.read().decode()


def stale_counts(folder: Path) -> None:
    """What an earlier run left in the owner's folder: 7 turns of a long-dead worker."""
    folder.mkdir()
    stale = MmapedDict(str(folder / "counter_1.db"))
    key = mmap_key("docpilot_turns", "docpilot_turns_total", ["kind"], ["answer"],
                   "turns answered, by result kind")
    stale.write_value(key, 7.0, 0.0)
    stale.close()


def batch_on_workers(w: ServeProcess, size: int = 4) -> list[tuple[int, HTTPConnection]]:
    """``size`` connections opened at once (so both workers race to accept them), each
    with the worker that accepted it (after one health call: accepted by then)."""
    batch = [HTTPConnection("127.0.0.1", w.port, timeout=60) for _ in range(size)]
    for connection in batch:
        connection.connect()
    placed = []
    for connection in batch:
        assert call(connection, "GET", "/api/health")[0] == 200
        assert connection.sock is not None
        worker = serving_pid(w.process.pid, w.port, connection.sock.getsockname()[1])
        assert worker is not None, "a worker holds the connection"
        placed.append((worker, connection))
    return placed


def test_every_scrape_reports_the_turns_of_both_workers(
    example_site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    owner_folder = tmp_path / "prometheus"
    stale_counts(owner_folder)
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(owner_folder))
    monkeypatch.setenv(SECRET_ENV, "metrics-secret")
    config = tmp_path / "docpilot.toml"
    replies = [answer_reply(markdown="Uncited on purpose.")] * MAX_TURNS
    with (
        OpenAIChatServer(replies) as model,
        WebhookReceiver(b"metrics-secret", mode="down") as receiver,
    ):
        # Every event waits in the outbox: the receiver is down, retries are 60 s off.
        config.write_text(
            f"[records]\npath = {json.dumps(str(tmp_path / 'records.sqlite3'))}\n"
            "[limits]\nanswers_per_minute = 0\nanswers_per_minute_per_client = 0\n"
            "[metrics]\nenabled = true\n"
            f'[webhooks]\nurls = ["{receiver.url}"]\nsecret_env = "{SECRET_ENV}"\n'
            "backoff_seconds = 60\n"
            f'[[providers]]\nkind = "openai"\nbase_url = "{model.base_url}"\n'
            'model = "gpt-4o-mini"\nretries = 0\n',
            encoding="utf-8",
        )
        with ServeProcess(example_site, config, tmp_path / "w.log", "", "--workers", "2") as w:
            sent = 0
            kinds: Counter[str] = Counter()
            answered: Counter[int] = Counter()  # turns by the worker that answered them
            scrapes: list[tuple[int, float, float]] = []  # (worker, turns, total stages)
            deadline = time.monotonic() + DEADLINE_SECONDS
            while len(answered) < 2 or min(answered.values()) < TURNS_PER_WORKER:
                assert time.monotonic() < deadline, f"turns reached only {dict(answered)}"
                assert sent < MAX_TURNS, f"turns reached only {dict(answered)}"
                placed = batch_on_workers(w)
                for worker, connection in placed:
                    status, body = call(connection, "POST", "/api/ask", {"question": COVERED})
                    assert status == 200
                    sent += 1
                    kinds[json.loads(body)["kind"]] += 1
                    answered[worker] += 1
                    # The same connection, so the same worker answers the scrape.
                    status, text = call(connection, "GET", "/metrics")
                    assert status == 200
                    scrapes.append((worker, *totals(text)))
                    connection.close()
            # One event per turn, one more per refusal: the outbox's depth on either worker.
            waiting = {"spool": 0.0, "outbox": float(sent + kinds["refusal"])}
            settled: dict[int, dict[str, float]] = {}
            while set(settled) != set(answered):
                assert time.monotonic() < deadline, f"depths settled only on {settled}"
                for worker, connection in batch_on_workers(w):
                    text = call(connection, "GET", "/metrics")[1]
                    connection.close()
                    assert totals(text) == (sent, sent), "no count lost or added at rest"
                    if depths(text) == waiting:
                        settled[worker] = waiting
                if set(settled) != set(answered):
                    time.sleep(0.05)  # polled: the writers move the spool into the outbox
            folders = list(owner_folder.glob("docpilot-metrics-*"))
        assert receiver.deliveries, "the outbox was being delivered"
    assert {worker for worker, _, _ in scrapes} == set(answered), "scrapes reached both"
    # Every scrape counts every turn sent so far, on both workers, and no stale turn.
    assert [turns for _, turns, _ in scrapes] == list(range(1, sent + 1))
    assert [stages for _, _, stages in scrapes] == list(range(1, sent + 1))
    assert len(folders) == 1, "one fresh folder for this start, inside the owner's"
    assert not folders[0].exists(), "removed when the runtime stops"
    assert (owner_folder / "counter_1.db").exists(), "the owner's other files are left alone"
