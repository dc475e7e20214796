"""`/metrics` of a real `docpilot serve --workers 2`: turns answered by both workers, and
every scrape, whichever worker answers it, reports the total of both (so the counters
never go backwards between scrapes). Which worker holds a connection is read from /proc,
so the test knows the turns and the scrapes reached both. The start's metrics folder is
a fresh one (an earlier run's counts in the owner's folder never add in) and is gone
after the runtime stops."""

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

COVERED = "How do I exclude a page from the assistant?"
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


def test_every_scrape_reports_the_turns_of_both_workers(
    example_site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    owner_folder = tmp_path / "prometheus"
    stale_counts(owner_folder)
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(owner_folder))
    config = tmp_path / "docpilot.toml"
    replies = [answer_reply(markdown="Uncited on purpose.")] * MAX_TURNS
    with OpenAIChatServer(replies) as model:
        config.write_text(
            f"[records]\npath = {json.dumps(str(tmp_path / 'records.sqlite3'))}\n"
            "[limits]\nanswers_per_minute = 0\nanswers_per_minute_per_client = 0\n"
            "[metrics]\nenabled = true\n"
            f'[[providers]]\nkind = "openai"\nbase_url = "{model.base_url}"\n'
            'model = "gpt-4o-mini"\nretries = 0\n',
            encoding="utf-8",
        )
        with ServeProcess(example_site, config, tmp_path / "w.log", "", "--workers", "2") as w:
            sent = 0
            answered: Counter[int] = Counter()  # turns by the worker that answered them
            scrapes: list[tuple[int, float, float]] = []  # (worker, turns, total stages)
            deadline = time.monotonic() + DEADLINE_SECONDS
            while len(answered) < 2 or min(answered.values()) < TURNS_PER_WORKER:
                assert time.monotonic() < deadline, f"turns reached only {dict(answered)}"
                assert sent < MAX_TURNS, f"turns reached only {dict(answered)}"
                # A few connections at once, so both workers race to accept them.
                batch = [HTTPConnection("127.0.0.1", w.port, timeout=60) for _ in range(4)]
                try:
                    for connection in batch:
                        connection.connect()
                    for connection in batch:
                        status, _ = call(connection, "POST", "/api/ask", {"question": COVERED})
                        assert status == 200
                        sent += 1
                        assert connection.sock is not None
                        worker = serving_pid(w.process.pid, w.port,
                                             connection.sock.getsockname()[1])
                        assert worker is not None, "a worker holds the connection"
                        answered[worker] += 1
                        # The same connection, so the same worker answers the scrape.
                        status, text = call(connection, "GET", "/metrics")
                        assert status == 200
                        scrapes.append((worker, *totals(text)))
                finally:
                    for connection in batch:
                        connection.close()
            folders = list(owner_folder.glob("docpilot-metrics-*"))
    assert {worker for worker, _, _ in scrapes} == set(answered), "scrapes reached both"
    # Every scrape counts every turn sent so far, on both workers, and no stale turn.
    assert [turns for _, turns, _ in scrapes] == list(range(1, sent + 1))
    assert [stages for _, _, stages in scrapes] == list(range(1, sent + 1))
    assert len(folders) == 1, "one fresh folder for this start, inside the owner's"
    assert not folders[0].exists(), "removed when the runtime stops"
    assert (owner_folder / "counter_1.db").exists(), "the owner's other files are left alone"
