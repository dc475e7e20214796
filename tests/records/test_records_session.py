"""Records through the real runtime: a scripted session of mixed turns over uvicorn leaves
what it should (and a pasted credential nowhere), on SQLite and on PostgreSQL; a runtime
killed with records still in its spool and restarted loses none and duplicates none;
`docpilot report` on that database lists the refused questions grouped."""

from __future__ import annotations

import json
import signal
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from docpilot_runtime import cli
from docpilot_runtime.records import Recorder, RecordsSettings, TurnRecord, open_store
from records_backends import BACKENDS, database_url
from records_session import CREDENTIAL, NOTE, REFUSED, SECRET, run_session
from servers.processes import ServeProcess

WAIT = 60.0  # seconds a condition may take before the test fails (polled, never slept)


@pytest.fixture(params=BACKENDS)
def backend(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    """The backend's name; for PostgreSQL, DOCPILOT_DATABASE_URL points at a fresh database."""
    with database_url(request.param, tmp_path) as url:
        if url:
            monkeypatch.setenv("DOCPILOT_DATABASE_URL", url)
        else:
            monkeypatch.delenv("DOCPILOT_DATABASE_URL", raising=False)
        yield url


def everything_stored(records: RecordsSettings, url: str) -> str:
    """Every byte the records left on disk (SQLite file, WAL, spool) or, for PostgreSQL,
    every row as text: where a leaked secret would be."""
    parts = []
    folder = records.sqlite_path().parent
    for path in folder.rglob("*"):
        if path.is_file():
            parts.append(path.read_bytes().decode("utf-8", "replace"))
    if url:
        import psycopg

        with psycopg.connect(url) as db:
            for table in ("turns", "feedback"):
                parts.extend(str(row) for row in db.execute(f"SELECT * FROM {table}"))
    return "\n".join(parts)


def test_a_mixed_session_leaves_the_records_it_should_and_no_secret(
    example_site: Path, tmp_path: Path, backend: str
) -> None:
    records = RecordsSettings(path=str(tmp_path / "records" / "records.sqlite3"))
    session = run_session(example_site, records)

    store = open_store(records.sqlite_path(), backend or None)
    try:
        rows = {row["turn_id"]: row for row in store.turns()}
    finally:
        store.close()
    assert set(rows) == set(session.results)  # every turn, once

    answer = rows[session.answer]
    assert answer["kind"] == "answer" and answer["question"].startswith("How do I exclude")
    assert answer["provider"] == "openai" and answer["model"] == "scripted-model"
    assert answer["cited"] == [c["id"] for c in session.results[session.answer]["citations"]]
    assert answer["cited_pages"] and answer["input_tokens"] > 0
    assert answer["cost_micro_usd"] > 0 and answer["bundle_hash"] == session.bundle_hash
    assert {"retrieval", "answer", "first_delta", "total"} <= set(answer["latency_ms"])
    assert answer["feedback"]["rating"] == "down" and answer["feedback"]["note"] == NOTE

    assert rows[session.passages]["kind"] == "passages"
    assert rows[session.social]["kind"] == "social"
    for turn_id, question in zip(session.refusals, REFUSED, strict=True):
        assert rows[turn_id]["kind"] == "refusal" and rows[turn_id]["question"] == question
        assert rows[turn_id]["closest"]  # the pages the gate found nearest

    credential = rows[session.credential]
    assert credential["kind"] == "credential" and credential["question"] is None
    assert credential["withheld"] == "credential" and credential["credential_kind"]
    stored = everything_stored(records, backend)
    assert SECRET not in stored and SECRET[4:20] not in stored and CREDENTIAL not in stored
    assert NOTE in stored  # the search above does look at the stored text

    out = tmp_path / "report"
    assert cli.main(["report", "--out", str(out), *_config(tmp_path, records)]) == 0
    html = (out / "report.html").read_text(encoding="utf-8")
    summary = (out / "summary.md").read_text(encoding="utf-8")
    # The two sourdough questions are one group (2 turns), Everest another.
    assert "sourdough" in summary and "<td class=\"n\">2</td>" in html
    for question in REFUSED:
        assert question in html and question in summary
    assert SECRET not in html and SECRET not in summary


def _config(tmp_path: Path, records: RecordsSettings) -> list[str]:
    config = tmp_path / "docpilot.toml"
    config.write_text(f"[records]\npath = {json.dumps(records.path)}\n", encoding="utf-8")
    return ["--config", str(config)]


# ---------------------------------------------------------------------- kill and restart




def _wait_for(condition: object, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.05)
    pytest.fail(f"{what} did not happen within {WAIT} s")


class RuntimeProcess(ServeProcess):
    """`docpilot serve` in a subprocess, healthy once made, so it can be killed for real
    (SIGKILL)."""

    def __init__(self, site: Path, config: Path, log: Path, database_url: str) -> None:
        super().__init__(site, config, log, database_url)
        self.wait_healthy()

    def ask(self, question: str) -> str:
        response = httpx.post(f"{self.base_url}/api/ask", json={"question": question}, timeout=60)
        assert response.status_code == 200, response.text
        turn_id: str = response.json()["turn_id"]
        return turn_id

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(WAIT)
        self._out.close()


class WriteBlocker:
    """Holds the database's write lock from outside, so the runtime's writer waits and
    turns pile up in its spool (SQLite: BEGIN EXCLUSIVE; PostgreSQL: LOCK TABLE)."""

    def __init__(self, db_file: Path, url: str) -> None:
        if url:
            import psycopg

            self._pg = psycopg.connect(url)
            self._pg.execute("LOCK TABLE turns IN EXCLUSIVE MODE")
        else:
            self._lite = sqlite3.connect(db_file, isolation_level=None)
            self._lite.execute("BEGIN EXCLUSIVE")
        self._url = url

    def release(self) -> None:
        if self._url:
            self._pg.rollback()
            self._pg.close()
        else:
            self._lite.execute("ROLLBACK")
            self._lite.close()


def test_a_killed_runtime_with_spooled_records_loses_none_and_duplicates_none(
    example_site: Path, tmp_path: Path, backend: str
) -> None:
    records = RecordsSettings(path=str(tmp_path / "records.sqlite3"))
    config = tmp_path / "docpilot.toml"
    config.write_text(f"[records]\npath = {json.dumps(records.path)}\n", encoding="utf-8")
    db_file = records.sqlite_path()
    recorder = Recorder(records, database_url=backend)  # the test's view of the same spool

    def stored_ids() -> list[str]:
        if not backend and not db_file.exists():
            return []
        store = open_store(db_file, backend)
        try:
            return [row["turn_id"] for row in store.turns()]
        finally:
            store.close()

    log = tmp_path / "runtime.log"
    first = RuntimeProcess(example_site, config, log, backend)
    written = [first.ask(q) for q in ("How do I exclude a page from the assistant?", "hello")]
    _wait_for(lambda: sorted(stored_ids()) == sorted(written), "the first turns being written")

    blocker = WriteBlocker(db_file, backend)
    spooled = [first.ask(q) for q in (*REFUSED, "thanks!")]
    _wait_for(lambda: recorder.spool.depth() == len(spooled), "the spool holding the turns")
    first.kill()
    blocker.release()
    assert sorted(stored_ids()) == sorted(written)  # the spooled ones were never written

    # And a crash between a database write and the spool's delete: entries already
    # written come back in a spool file too.
    store = open_store(db_file, backend)
    rewritten = [TurnRecord.from_dict(row) for row in store.turns()]
    store.close()
    for record in rewritten:
        recorder.spool.append({"turn": record.to_dict()})
    assert recorder.spool.depth() == len(spooled) + len(written)

    second = RuntimeProcess(example_site, config, log, backend)
    try:
        _wait_for(lambda: recorder.spool.depth() == 0, "the spool being replayed")
        after = stored_ids()
        assert sorted(after) == sorted(written + spooled)  # none lost, none twice
        again = second.ask("How do I exclude a page from the assistant?")
    finally:
        second.stop()
    assert sorted(stored_ids()) == sorted([*written, *spooled, again])


# ---------------------------------------------------------------------- feedback and consent


def test_feedback_and_consent_through_the_api(
    example_site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DOCPILOT_DATABASE_URL", raising=False)
    from docpilot_runtime.serve.app import create_app
    from docpilot_runtime.settings.load import Settings
    from servers.runtime import serve_app

    records = RecordsSettings(path=str(tmp_path / "r.sqlite3"), require_consent=True)
    question = "How do I exclude a page from the assistant?"
    with serve_app(create_app(example_site, Settings(records=records))) as live, httpx.Client(
        base_url=live.base_url, timeout=60
    ) as client:
        asked = client.post("/api/ask", json={"question": question}).json()["turn_id"]
        consented = client.post(
            "/api/ask", json={"question": question, "consent": True}
        ).json()["turn_id"]
        bad = client.post("/api/ask", json={"question": question, "consent": "yes"})
        assert bad.status_code == 400 and bad.json()["error"]["field"] == "consent"
        tag = client.post("/api/feedback", json={"turn_id": asked, "rating": "down",
                                                 "reasons": ["because"]})
        assert tag.status_code == 400 and tag.json()["error"]["field"] == "reasons[0]"
        # Without consent only the rating is kept: the note is the reader's own text.
        unconsented = {"turn_id": asked, "rating": "down", "note": "my own words"}
        assert client.post("/api/feedback", json=unconsented).status_code == 204
        ok = {"turn_id": consented, "rating": "down", "reasons": ["outdated", "unclear"],
              "note": f"the key {SECRET} is in my config"}
        assert client.post("/api/feedback", json=ok).status_code == 204
        # A made-up turn id is answered the same way (no oracle) but never stored.
        made_up = {"turn_id": "f" * 32, "rating": "up"}
        assert client.post("/api/feedback", json=made_up).status_code == 204
    store = open_store(records.sqlite_path(), "")
    try:
        rows = {row["turn_id"]: row for row in store.turns()}
        with sqlite3.connect(records.sqlite_path()) as db:
            feedback_ids = [row[0] for row in db.execute("SELECT turn_id FROM feedback")]
    finally:
        store.close()
    assert rows[asked]["question"] is None and rows[asked]["withheld"] == "consent"
    assert rows[consented]["question"] == question
    assert rows[consented]["feedback"]["reasons"] == ["outdated", "unclear"]
    # A note holding a credential is dropped, as a history item holding one is.
    assert rows[consented]["feedback"]["note"] == ""
    assert rows[asked]["feedback"] == {"rating": "down", "reasons": [], "note": "",
                                       "created_ms": rows[asked]["feedback"]["created_ms"]}
    assert sorted(feedback_ids) == sorted([asked, consented])
    assert SECRET not in everything_stored(records, "")
    assert "my own words" not in everything_stored(records, "")
