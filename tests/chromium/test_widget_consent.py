"""Consent in Chromium: where the owner requires it, the widget shows a short notice with
Accept; questions asked before it go without `consent` and the runtime stores nothing of
them; after Accept they carry `"consent": true` and are stored, and the notice stays gone."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browsing import Reader, with_widget_config
from docpilot_runtime.records import RecordsSettings, open_store
from docpilot_runtime.serve.app import create_app
from docpilot_runtime.settings.limits import LimitSettings
from docpilot_runtime.settings.load import Settings
from playwright.sync_api import expect
from servers.runtime import RunningServer, serve_app

COVERED = "How do I exclude a page from the assistant?"
LATER = "How do I change the widget title?"


@pytest.fixture
def consent_server(
    example_site: Path, tmp_path: Path
) -> Iterator[tuple[RunningServer, RecordsSettings]]:
    records = RecordsSettings(path=str(tmp_path / "records.sqlite3"), require_consent=True)
    settings = Settings(
        caps=LimitSettings(answers_per_minute=0, answers_per_minute_per_client=0),
        records=records,
    )
    with serve_app(create_app(example_site, settings)) as running:
        yield running, records


def stored_turns(records: RecordsSettings, count: int) -> list[dict[str, Any]]:
    """The records once ``count`` turns are in the database (polled, with a deadline)."""
    deadline = time.monotonic() + 30
    while True:
        store = open_store(records.sqlite_path())
        try:
            turns = store.turns()
        finally:
            store.close()
        if len(turns) >= count or time.monotonic() > deadline:
            return turns
        time.sleep(0.05)


def test_nothing_of_a_question_is_stored_until_the_reader_accepts(
    reader: Reader, consent_server: tuple[RunningServer, RecordsSettings]
) -> None:
    live, records = consent_server
    page = reader.page
    with_widget_config(page, "/", lambda config: config.update(require_consent=True))
    page.goto(f"{live.base_url}/")
    reader.open_panel()
    notice = page.locator(".dp-consent")
    expect(notice).to_contain_text("Nothing is kept until you accept")
    reader.ask(COVERED)
    reader.wait_answer()
    assert "consent" not in reader.asks()[0]
    [first] = stored_turns(records, 1)
    assert first["withheld"] == "consent" and first["question"] is None
    assert first["cited"] == [] and first["closest"] == []
    page.get_by_role("button", name="Accept").click()
    expect(notice).to_have_count(0)
    reader.ask(LATER)
    reader.wait_answer(1)
    assert reader.asks()[1]["consent"] is True
    turns = stored_turns(records, 2)
    assert [t["question"] for t in turns] == [None, LATER]
    page.reload()  # the open conversation comes back with its panel open
    expect(page.locator("#dp-panel .dp-input")).to_be_visible()
    expect(page.locator(".dp-turn")).to_have_count(2)
    expect(page.locator(".dp-consent")).to_have_count(0)  # the choice is remembered
