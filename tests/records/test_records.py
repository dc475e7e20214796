"""Turn records: the store (SQLite and a real PostgreSQL, same tests), the spool in front
of it, what a turn keeps (never a credential, no question without consent), retention,
deletion, export, and the `[records]` settings."""

from __future__ import annotations

import asyncio
import io
import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from docpilot_runtime import cli
from docpilot_runtime.records import (
    FeedbackRecord,
    Recorder,
    RecordsSettings,
    RecordStore,
    TurnRecord,
    open_store,
    turn_record,
)
from docpilot_runtime.records.export import export_jsonl
from docpilot_runtime.records.schema import MIGRATIONS
from docpilot_runtime.records.spool import read_entries
from docpilot_runtime.settings.load import SettingsError, load_settings
from docpilot_runtime.shared.types import AskRequest, Citation, PageRef, Result
from records_backends import BACKENDS, database_url, writes_blocked

DAY_MS = 86_400_000
NOW = int(time.time() * 1000)  # turns in the tests are recent unless a test says otherwise


@pytest.fixture(params=BACKENDS)
def backend_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with database_url(request.param, tmp_path) as url:
        yield url


@pytest.fixture
def settings(tmp_path: Path) -> RecordsSettings:
    return RecordsSettings(path=str(tmp_path / "records.sqlite3"))


@pytest.fixture
def store(settings: RecordsSettings, backend_url: str) -> Iterator[RecordStore]:
    opened = open_store(settings.sqlite_path(), backend_url)
    yield opened
    opened.close()


def turn(turn_id: str, created_ms: int = NOW, **fields: object) -> TurnRecord:
    values: dict[str, object] = {"question": f"question {turn_id}", **fields}
    return TurnRecord(turn_id=turn_id, created_ms=created_ms, kind="answer", bundle_hash="b1",
                      **values)  # type: ignore[arg-type]


def result(kind: str = "answer", **fields: object) -> Result:
    return Result(turn_id="t-1", kind=kind, markdown="text", bundle_hash="b1",  # type: ignore[arg-type]
                  **fields)  # type: ignore[arg-type]


# ---------------------------------------------------------------------- the store


def test_migrations_apply_once_and_reopening_keeps_the_turns(
    store: RecordStore, settings: RecordsSettings, backend_url: str
) -> None:
    store.write([turn("a", cited=("/p/#x",), latency_ms={"total": 12.5})], [])
    again = open_store(settings.sqlite_path(), backend_url)
    try:
        assert again.migrate() == max(version for version, _ in MIGRATIONS)
        rows = again.turns()
    finally:
        again.close()
    assert [r["turn_id"] for r in rows] == ["a"]
    assert rows[0]["cited"] == ["/p/#x"] and rows[0]["latency_ms"] == {"total": 12.5}
    assert rows[0]["tentative"] is False and rows[0]["feedback"] is None


def test_a_turn_written_twice_is_stored_once_and_the_newest_feedback_wins(
    store: RecordStore,
) -> None:
    store.write([turn("a")], [FeedbackRecord("a", 2_000, "down", ("incorrect",), "wrong")])
    store.write([turn("a", question="changed")], [FeedbackRecord("a", 3_000, "up")])
    # A replayed older feedback (a spool written twice) does not undo the newer one.
    store.write([], [FeedbackRecord("a", 2_000, "down", ("incorrect",), "wrong")])
    rows = store.turns()
    assert len(rows) == 1
    assert rows[0]["question"] == "question a"  # the first write stands
    assert rows[0]["feedback"] == {"rating": "up", "reasons": [], "note": "", "created_ms": 3_000}


def test_deletion_by_turn_id_and_retention_remove_turns_and_their_feedback(
    store: RecordStore,
) -> None:
    store.write(
        [turn("old", created_ms=1_000), turn("mid", created_ms=5_000), turn("new", 9_000)],
        [FeedbackRecord("old", 1_500, "down"), FeedbackRecord("mid", 5_500, "up")],
    )
    assert store.delete(["mid", "missing"]) == 1
    assert store.purge_before(2_000) == 1
    assert [r["turn_id"] for r in store.turns()] == ["new"]
    store.write([turn("old", created_ms=1_000)], [])  # the id is free again, no feedback
    assert store.turns()[0]["feedback"] is None


# ---------------------------------------------------------------------- the spool


def test_a_recorded_turn_is_on_disk_before_record_returns_and_written_behind(
    settings: RecordsSettings, backend_url: str
) -> None:
    async def scenario() -> tuple[int, int, list[str], int]:
        recorder = Recorder(settings, database_url=backend_url)
        await recorder.record(result(), AskRequest("How do I exclude a page?"), {"total": 3.0})
        spooled = recorder.spool.depth()
        await recorder.start()
        await recorder.aclose()  # one last drain
        store = open_store(settings.sqlite_path(), backend_url)
        try:
            return spooled, recorder.spool.depth(), [r["question"] for r in store.turns()], 0
        finally:
            store.close()

    spooled, left, questions, _ = asyncio.run(scenario())
    assert spooled == 1 and left == 0
    assert questions == ["How do I exclude a page?"]


def test_a_stalled_database_never_takes_the_threads_a_turn_needs(
    settings: RecordsSettings, backend_url: str
) -> None:
    """While another client holds the records tables, every call of the recorder's on the
    database waits (here forty feedback lookups of turns it does not know, as a flood of
    made-up turn ids would make). A turn meanwhile still runs its blocking steps on the
    shared thread pool (retrieval, the spool's append) and is recorded."""

    async def scenario() -> tuple[int, list[bool]]:
        recorder = Recorder(settings, database_url=backend_url)
        await asyncio.to_thread(recorder.drain)  # the database open, as after a first write
        backend = "postgres" if backend_url else "sqlite"
        with writes_blocked(backend, backend_url, settings.sqlite_path()):
            lookups = [
                asyncio.create_task(recorder.feedback(FeedbackRecord(f"made-up-{n}", NOW, "up")))
                for n in range(40)  # more than the shared pool's threads (at most 32)
            ]
            await asyncio.sleep(0)  # each task runs up to its lookup
            turn_done = asyncio.gather(
                asyncio.to_thread(lambda: "retrieval"),
                recorder.record(result(), AskRequest("How do I exclude a page?"), {}),
            )
            await asyncio.wait_for(turn_done, timeout=20)
            spooled = recorder.spool.depth()
        kept = await asyncio.gather(*lookups)
        await recorder.aclose()
        return spooled, kept

    spooled, kept = asyncio.run(scenario())
    assert spooled == 1
    assert kept == [False] * 40  # unknown turns: nothing kept


def test_a_spool_replayed_after_a_crash_between_write_and_delete_duplicates_nothing(
    settings: RecordsSettings, backend_url: str, tmp_path: Path
) -> None:
    recorder = Recorder(settings, database_url=backend_url)
    for n in range(3):
        recorder.spool.append({"turn": turn(f"t{n}", created_ms=NOW + n).to_dict()})
    recorder.spool.append({"feedback": FeedbackRecord("t1", 2_000, "down").to_dict()})
    taken = recorder.spool.take()
    assert taken is not None
    kept = tmp_path / "copy"
    shutil.copy(taken, kept)
    assert recorder.drain() == 4
    shutil.copy(kept, taken)  # the crash: written to the database, not yet deleted
    assert recorder.drain() == 4
    rows = recorder.store().turns()
    recorder.store().close()
    assert [r["turn_id"] for r in rows] == ["t0", "t1", "t2"]
    assert rows[1]["feedback"]["rating"] == "down"
    assert list(recorder.spool.folder.glob("*.draining")) == []


def test_a_torn_last_line_is_dropped_and_the_complete_entries_replayed(
    settings: RecordsSettings,
) -> None:
    recorder = Recorder(settings, database_url="")
    recorder.spool.append({"turn": turn("whole").to_dict()})
    with (recorder.spool.folder / "spool.jsonl").open("ab") as spool:
        spool.write(b'{"turn": {"turn_id": "torn", "crea')  # no newline: never fsynced
    [path] = recorder.spool.pending()
    assert [e["turn"]["turn_id"] for e in read_entries(path)] == ["whole"]
    assert recorder.drain() == 1
    assert [r["turn_id"] for r in recorder.store().turns()] == ["whole"]
    recorder.store().close()


# ---------------------------------------------------------------------- what a turn keeps


def test_a_credential_turn_keeps_only_its_kind() -> None:
    secret = "ghp_" + "a1B2" * 9
    record = turn_record(
        result("credential", credential_kind="github_token"),
        AskRequest(f"my token is {secret}"),
        {"total": 1.0},
        RecordsSettings(),
    )
    assert record.question is None and record.withheld == "credential"
    assert record.credential_kind == "github_token"
    assert secret not in json.dumps(record.to_dict())


def test_without_consent_where_the_owner_requires_it_the_question_is_not_kept() -> None:
    required = RecordsSettings(require_consent=True)
    kept = turn_record(result(), AskRequest("q?", consent=True), {}, required)
    withheld = turn_record(result(), AskRequest("q?"), {}, required)
    assert kept.question == "q?" and kept.withheld is None
    assert withheld.question is None and withheld.withheld == "consent"
    assert withheld.kind == "answer"  # the turn itself is still counted


def test_a_turn_record_carries_citations_closest_pages_usage_and_latency() -> None:
    record = turn_record(
        result(
            citations=[Citation(1, "/a/#x", "/a/#x", "A"), Citation(2, "/a/#y~1", "/a/#y", "A")],
            closest=[PageRef("/b/", "B")],
            confidence=71,
            retriever="hybrid",
            rescued=True,
            usage={"provider": "openai", "model": "m", "input_tokens": 900,
                   "output_tokens": 40, "cost_micro_usd": 1234},
        ),
        AskRequest("q?"),
        {"retrieval": 4.0, "answer": 200.0, "total": 210.0},
        RecordsSettings(),
    )
    assert record.cited == ("/a/#x", "/a/#y~1")
    assert record.cited_pages == ({"url": "/a/", "title": "A"},)
    assert record.closest == ({"url": "/b/", "title": "B"},)
    assert (record.provider, record.model, record.cost_micro_usd) == ("openai", "m", 1234)
    assert record.input_tokens == 900 and record.latency_ms["answer"] == 200.0
    assert record.confidence == 71 and record.rescued and record.retriever == "hybrid"


# ---------------------------------------------------------------------- the owner's verbs


def test_export_writes_one_json_line_per_turn_with_its_feedback(store: RecordStore) -> None:
    store.write([turn("a"), turn("b", NOW + 1)], [FeedbackRecord("b", NOW + 2, "up")])
    out = io.StringIO()
    assert export_jsonl(store, out) == 2
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["turn_id"] for line in lines] == ["a", "b"]
    assert lines[1]["feedback"]["rating"] == "up"


def test_records_cli_exports_and_deletes_by_turn_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DOCPILOT_DATABASE_URL", raising=False)
    config = tmp_path / "docpilot.toml"
    config.write_text('[records]\npath = "data/records.sqlite3"\n', encoding="utf-8")
    recorder = Recorder(load_settings(config).records, tmp_path)
    recorder.spool.append({"turn": turn("spooled-only").to_dict()})  # a runtime never wrote it
    assert cli.main(["records", "export", "--format", "jsonl", "--config", str(config)]) == 0
    exported = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [e["turn_id"] for e in exported] == ["spooled-only"]
    assert (tmp_path / "data" / "records.sqlite3").exists()  # relative to the settings file
    assert cli.main(["records", "delete", "spooled-only", "--config", str(config)]) == 0
    assert cli.main(["records", "delete", "spooled-only", "--config", str(config)]) == 1
    cli.main(["records", "export", "--config", str(config)])
    assert "deleted" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("table", "key"),
    [
        ("retention_days = -1", "retention_days"),
        ("retention_days = 40000", "retention_days"),
        ('retention_days = "90"', "retention_days"),
        ("require_consent = 1", "require_consent"),
        ('path = ""', "path"),
        ("colour = 3", "colour"),
    ],
)
def test_bad_records_settings_name_the_file_and_key(
    tmp_path: Path, table: str, key: str
) -> None:
    config = tmp_path / "docpilot.toml"
    config.write_text(f"[records]\n{table}\n", encoding="utf-8")
    with pytest.raises(SettingsError) as caught:
        load_settings(config)
    assert str(config) in str(caught.value) and key in str(caught.value)


def test_records_settings_defaults_and_values(tmp_path: Path) -> None:
    config = tmp_path / "docpilot.toml"
    config.write_text(
        '[records]\npath = "r.db"\nretention_days = 0\nrequire_consent = true\n',
        encoding="utf-8",
    )
    records = load_settings(config).records
    assert (records.path, records.retention_days, records.require_consent) == ("r.db", 0, True)
    assert records.sqlite_path(tmp_path) == tmp_path / "r.db"
    assert RecordsSettings().retention_days == 90 and not RecordsSettings().require_consent


def test_retention_removes_old_turns_when_the_writer_drains(
    tmp_path: Path, backend_url: str
) -> None:
    settings = RecordsSettings(path=str(tmp_path / "r.sqlite3"), retention_days=1)
    recorder = Recorder(settings, database_url=backend_url)
    recorder.spool.append({"turn": turn("ancient", created_ms=1_000).to_dict()})
    recorder.drain()
    assert recorder.store().turns() == []
    recorder.store().close()
