"""Turn records: what every turn leaves for the site owner (never a pasted credential).

`Recorder` is the one interface the turn and the app use; `open_store` opens the
database (SQLite by default, PostgreSQL when `DOCPILOT_DATABASE_URL` is set) for the
CLI's `records` and `report` verbs.
"""

from docpilot_runtime.records.recorder import Recorder, StageClock, turn_record
from docpilot_runtime.records.schema import FeedbackRecord, TurnRecord
from docpilot_runtime.records.store import DATABASE_URL_ENV, RecordsError, RecordStore, open_store
from docpilot_runtime.settings.records import RecordsSettings

__all__ = [
    "DATABASE_URL_ENV",
    "FeedbackRecord",
    "RecordStore",
    "Recorder",
    "RecordsError",
    "RecordsSettings",
    "StageClock",
    "TurnRecord",
    "open_store",
    "turn_record",
]
