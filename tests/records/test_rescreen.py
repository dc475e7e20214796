"""What an older credential check let into the records is removed once a runtime with a
better one starts (issue 27, finding 4): stored questions, feedback notes, webhook events
and spooled entries holding the shapes the older check missed (a key at the end of a URL
path, look-alike letters, "my key is NAME = …"), on SQLite and a real PostgreSQL, and
through a real `docpilot serve` starting on such a store."""

from __future__ import annotations

import json
import random
import string
import time
from pathlib import Path

import pytest
from docpilot_runtime.records import RecordsSettings, open_store
from docpilot_runtime.records.recorder import Recorder
from docpilot_runtime.records.rescreen import Screen, rescreen_store
from docpilot_runtime.records.schema import FeedbackRecord, TurnRecord
from docpilot_runtime.records.spool import Spool
from docpilot_runtime.records.webhooks import feedback_events, turn_events
from docpilot_runtime.serve.app import stored_text_screen
from records_backends import BACKENDS, database_url
from servers.processes import ServeProcess
from small_site import CACHE, INSTALL, PROXY, build_small_site

_rng = random.Random(4141)
ALNUM = string.ascii_letters + string.digits
GITHUB = "ghp_" + "".join(_rng.choice(ALNUM) for _ in range(36))
OPAQUE = "".join(_rng.choice(ALNUM) for _ in range(40))
# What an older check let through, and what stays.
MISSED = {
    "t-path": f"GET /docs/{GITHUB} gives 404, why?",
    "t-look-alike": "is this right? gh\u0440_" + GITHUB[4:],
    "t-prose": f"my key is OPENAI_API_KEY = {OPAQUE}",
}
CLEAN = {"t-clean": "How do I exclude a page from the assistant?"}
TARGETS = ("https://hooks.example.com/docpilot",)


def old_turn(turn_id: str, question: str) -> TurnRecord:
    return TurnRecord(turn_id=turn_id, created_ms=int(time.time() * 1000), kind="passages",
                      bundle_hash="b" * 64, question=question, confidence=80)


def note_for(turn_id: str) -> FeedbackRecord:
    note = f"the key {GITHUB} in /docs/{GITHUB}" if turn_id == "t-clean" else "thanks"
    return FeedbackRecord(turn_id, int(time.time() * 1000), "down", (), note)


def fill(store: object) -> None:
    """The store as an older runtime wrote it."""
    turns = [old_turn(i, q) for i, q in {**MISSED, **CLEAN}.items()]
    feedback = [note_for(t.turn_id) for t in turns]
    events = [e for t in turns for e in turn_events(t, TARGETS)]
    events += [e for f in feedback for e in feedback_events(f, TARGETS)]
    store.write(turns, feedback, events)  # type: ignore[attr-defined]


def outbox_text(store: object) -> str:
    with store.transaction() as cursor:  # type: ignore[attr-defined]
        cursor.execute("SELECT body FROM webhook_outbox")
        return "\n".join(row[0] for row in cursor.fetchall())


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_newer_check_sweeps_what_the_store_kept_once_per_version(
    backend: str, tmp_path: Path
) -> None:
    with database_url(backend, tmp_path) as url:
        store = open_store(tmp_path / "records.sqlite3", url)
        try:
            fill(store)
            assert GITHUB[4:] in outbox_text(store)
            screen = stored_text_screen()
            swept = rescreen_store(store, screen)
            assert swept is not None
            assert (swept.questions, swept.notes) == (len(MISSED), 1)
            assert swept.events == len(MISSED) + 1  # question_asked of each, and the note
            turns = {t["turn_id"]: t for t in store.turns()}
            for turn_id in MISSED:
                assert turns[turn_id]["question"] is None
                assert turns[turn_id]["withheld"] == "credential"
                assert turns[turn_id]["credential_kind"]
            assert turns["t-clean"]["question"] == CLEAN["t-clean"]
            assert turns["t-clean"]["feedback"]["note"] == ""
            assert turns["t-path"]["feedback"]["note"] == "thanks", "clean notes stay"
            text = outbox_text(store)
            assert GITHUB[4:] not in text and OPAQUE not in text
            assert CLEAN["t-clean"] in text
            # The same check does not sweep again; a newer one does (and finds nothing).
            assert rescreen_store(store, screen) is None
            again = rescreen_store(store, Screen(screen.find, screen.version + "-next"))
            assert again is not None and (again.questions, again.notes, again.events) == (0, 0, 0)
        finally:
            store.close()


def test_entries_an_older_runtime_spooled_are_screened_as_they_are_written(
    tmp_path: Path,
) -> None:
    settings = RecordsSettings(path=str(tmp_path / "records.sqlite3"))
    spool = Spool(settings.spool_folder(None))
    turn = old_turn("t-spooled", MISSED["t-path"])
    spool.append({"turn": turn.to_dict()})
    spool.append({"feedback": note_for("t-clean").to_dict()})
    recorder = Recorder(settings, screen=stored_text_screen())
    assert recorder.drain() == 2
    store = recorder.store()
    try:
        stored = {t["turn_id"]: t for t in store.turns()}
        assert stored["t-spooled"]["question"] is None
        assert stored["t-spooled"]["withheld"] == "credential"
    finally:
        store.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_docpilot_serve_starting_on_an_older_store_removes_what_it_kept(
    backend: str, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    build_small_site(site, tmp_path / "cache", [INSTALL, CACHE, PROXY])
    config = tmp_path / "docpilot.toml"
    config.write_text(f"[records]\npath = {json.dumps(str(tmp_path / 'records.sqlite3'))}\n",
                      encoding="utf-8")
    with database_url(backend, tmp_path) as url:
        store = open_store(tmp_path / "records.sqlite3", url)
        fill(store)
        store.close()
        with ServeProcess(site, config, tmp_path / "serve.log", url):
            pass  # it sweeps as its records open, before it answers
        store = open_store(tmp_path / "records.sqlite3", url)
        try:
            turns = {t["turn_id"]: t for t in store.turns()}
            assert all(turns[i]["question"] is None for i in MISSED)
            assert turns["t-clean"]["question"] == CLEAN["t-clean"]
            assert GITHUB[4:] not in outbox_text(store)
        finally:
            store.close()
    log = (tmp_path / "serve.log").read_text(errors="replace")
    assert "older check missed" in log and GITHUB[4:] not in log
