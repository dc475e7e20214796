"""Sweeping the records with a newer credential check: what an older check missed and the
records kept is removed once the runtime that knows better starts.

Questions are stored only after the check passed them, and feedback notes only when it
finds nothing, so a store written by an older runtime holds whatever that runtime's check
missed (a key at the end of a URL path, one behind look-alike letters). `rescreen_store`
runs once per version of the check (`Screen.version`, recorded in `docpilot_screened`):
every stored question it flags now is withheld as `credential` (with the kind found), every
flagged feedback note emptied, and the text of a webhook event not yet delivered is
replaced the same way (an event already delivered has left; its stored copy is cleaned
too). `screen_entry` does the same to spooled entries written before the upgrade.

The check itself is handed in (`Screen`): the records do not import the screen.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from docpilot_runtime.records.store import RecordStore

log = logging.getLogger("docpilot.records")

SCREENED_TABLE = "docpilot_screened"


@dataclass(frozen=True)
class Screen:
    """A credential check: ``find`` gives the kind of credential a text holds (None when
    clean); ``version`` changes whenever what it finds may change."""

    find: Callable[[str], str | None]
    version: str


@dataclass(frozen=True)
class Rescreened:
    """What one sweep removed."""

    questions: int = 0
    notes: int = 0
    events: int = 0


def rescreen_store(store: RecordStore, screen: Screen) -> Rescreened | None:
    """Sweep ``store`` with ``screen`` unless this version swept it already (None then).
    One transaction: processes starting together sweep once."""
    now = int(time.time() * 1000)
    with store.transaction() as cursor:
        claim = (f"INSERT INTO {SCREENED_TABLE} (version, screened_ms) VALUES (?, ?) "
                 "ON CONFLICT (version) DO NOTHING")
        cursor.execute(store.sql(claim), (screen.version, now))
        if cursor.rowcount == 0:
            return None
        questions = _questions(store, cursor, screen)
        notes = _notes(store, cursor, screen)
        events = _events(store, cursor, screen)
        done = (f"UPDATE {SCREENED_TABLE} SET questions = ?, notes = ?, events = ? "
                "WHERE version = ?")
        cursor.execute(store.sql(done), (questions, notes, events, screen.version))
    if questions or notes or events:
        log.warning(
            "records: the credential check found credentials an older check missed; removed "
            "from %d question(s), %d feedback note(s) and %d webhook event(s)",
            questions, notes, events,
        )
    return Rescreened(questions, notes, events)


def _questions(store: RecordStore, cursor: Any, screen: Screen) -> int:
    cursor.execute("SELECT turn_id, question FROM turns WHERE question IS NOT NULL")
    flagged = [(kind, turn_id) for turn_id, question in cursor.fetchall()
               if (kind := screen.find(question)) is not None]
    withhold = ("UPDATE turns SET question = NULL, withheld = 'credential', "
                "credential_kind = ? WHERE turn_id = ?")
    if flagged:
        cursor.executemany(store.sql(withhold), flagged)
    return len(flagged)


def _notes(store: RecordStore, cursor: Any, screen: Screen) -> int:
    cursor.execute("SELECT turn_id, note FROM feedback WHERE note <> ''")
    flagged = [(turn_id,) for turn_id, note in cursor.fetchall() if screen.find(note)]
    if flagged:
        cursor.executemany(store.sql("UPDATE feedback SET note = '' WHERE turn_id = ?"), flagged)
    return len(flagged)


def _events(store: RecordStore, cursor: Any, screen: Screen) -> int:
    cursor.execute("SELECT event_id, target, body FROM webhook_outbox")
    cleaned = []
    for event_id, target, body in cursor.fetchall():
        envelope = json.loads(body)
        data = envelope.get("data")
        if isinstance(data, dict) and (new := screened_data(data, screen)) is not data:
            envelope["data"] = new
            text = json.dumps(envelope, ensure_ascii=False, separators=(",", ":"))
            cleaned.append((text, event_id, target))
    if cleaned:
        update = "UPDATE webhook_outbox SET body = ? WHERE event_id = ? AND target = ?"
        cursor.executemany(store.sql(update), cleaned)
    return len(cleaned)


def screened_data(data: dict[str, Any], screen: Screen) -> dict[str, Any]:
    """An event's data with a flagged question (then only the turn's kind is told, as for
    a credential turn) or note removed; ``data`` itself when nothing is flagged."""
    question = data.get("question")
    if isinstance(question, str) and screen.find(question):
        return {"kind": data.get("kind")}
    note = data.get("note")
    if isinstance(note, str) and note and screen.find(note):
        return {**data, "note": ""}
    return data


def screen_entry(entry: dict[str, Any], screen: Screen) -> dict[str, Any]:
    """A spooled entry as the current check would have let it be written."""
    turn = entry.get("turn")
    if isinstance(turn, dict) and isinstance(question := turn.get("question"), str):
        kind = screen.find(question)
        if kind is not None:
            turn = {**turn, "question": None, "withheld": "credential", "credential_kind": kind}
            return {**entry, "turn": turn}
    feedback = entry.get("feedback")
    note = feedback.get("note") if isinstance(feedback, dict) else None
    if isinstance(feedback, dict) and isinstance(note, str) and note and screen.find(note):
        return {**entry, "feedback": {**feedback, "note": ""}}
    return entry


__all__ = ["Rescreened", "Screen", "rescreen_store", "screen_entry", "screened_data"]
