"""The owner's verbs over the records: open them (spool drained first), export, delete."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TextIO

from docpilot_runtime.records.recorder import DAY_MS, Recorder
from docpilot_runtime.records.store import RecordStore
from docpilot_runtime.settings.records import RecordsSettings
from docpilot_runtime.settings.webhooks import WebhookSettings


def open_records(
    settings: RecordsSettings, base: Path | None = None, webhooks: WebhookSettings | None = None
) -> RecordStore:
    """The records database, with whatever the spool still holds written into it first, so
    the owner sees turns a stopped (or crashed) runtime had not yet written. With
    ``webhooks``, their events are queued in the outbox as the runtime would have (the
    next `docpilot serve` delivers them), so draining here loses none."""
    recorder = Recorder(settings, base, webhooks=webhooks)
    recorder.drain()
    return recorder.store()


def export_jsonl(store: RecordStore, out: TextIO, since_ms: int = 0) -> int:
    """Every turn since ``since_ms`` as one JSON object per line (with its feedback)."""
    count = 0
    for turn in store.turns(since_ms):
        out.write(json.dumps(turn, ensure_ascii=False, separators=(",", ":")) + "\n")
        count += 1
    return count


def since_days_ms(days: int | None, now_ms: int) -> int:
    return 0 if days is None else now_ms - days * DAY_MS
