"""What one turn leaves in the records, and the numbered migrations that make its tables.

One place for the SQL: statements are written once in the dialect SQLite and
PostgreSQL share (``?`` placeholders, ``ON CONFLICT``, TEXT/INTEGER/BIGINT); where the
two differ, `DIALECT_SQL` holds both spellings side by side. Lists and maps (cited ids,
closest pages, stage latencies) are JSON text, so both databases read them the same way.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Dialect = Literal["sqlite", "postgres"]

# Why a turn's question is not stored: a pasted credential, or no consent yet.
Withheld = Literal["credential", "consent"]


@dataclass(frozen=True)
class TurnRecord:
    """One turn as the owner sees it later; never the reader's history or page."""

    turn_id: str
    created_ms: int  # Unix time in milliseconds, UTC
    kind: str
    bundle_hash: str
    question: str | None = None  # None when `withheld` says why
    withheld: Withheld | None = None
    credential_kind: str | None = None
    confidence: int | None = None
    model_confidence: int | None = None
    tentative: bool = False
    retriever: str | None = None
    rescued: bool = False
    cited: tuple[str, ...] = ()  # unit ids, in citation order
    cited_pages: tuple[dict[str, str], ...] = ()  # [{url, title}] of the cited units
    closest: tuple[dict[str, str], ...] = ()  # [{url, title}] the gate found nearest
    provider: str | None = None
    model: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_micro_usd: int = 0
    latency_ms: dict[str, float] = field(default_factory=dict)  # per stage, and "total"
    verdict: str | None = None  # the second opinion, when one is made later
    verdict_model: str | None = None  # the provider:model that gave it
    verdict_cost_micro_usd: int = 0  # what the second opinion cost

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("cited", "cited_pages", "closest"):
            data[key] = list(data[key])
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TurnRecord:
        known = {f for f in cls.__dataclass_fields__}
        values = {k: v for k, v in data.items() if k in known}
        for key in ("cited", "cited_pages", "closest"):
            values[key] = tuple(values.get(key) or ())
        return cls(**values)


@dataclass(frozen=True)
class FeedbackRecord:
    """A reader's rating of one turn; the latest per turn wins."""

    turn_id: str
    created_ms: int
    rating: Literal["up", "down"]
    reasons: tuple[str, ...] = ()
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["reasons"] = list(self.reasons)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FeedbackRecord:
        return cls(
            turn_id=data["turn_id"],
            created_ms=int(data["created_ms"]),
            rating=data["rating"],
            reasons=tuple(data.get("reasons") or ()),
            note=data.get("note") or "",
        )


@dataclass(frozen=True)
class VerdictRecord:
    """The second opinion on one turn, spooled when it arrives (after the answer)."""

    turn_id: str
    verdict: Literal["supported", "partial", "unsupported"]
    model: str = ""
    cost_micro_usd: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> VerdictRecord:
        return cls(
            turn_id=data["turn_id"],
            verdict=data["verdict"],
            model=data.get("model") or "",
            cost_micro_usd=int(data.get("cost_micro_usd") or 0),
        )


# Column order of the `turns` table; JSON columns are encoded on the way in.
TURN_COLUMNS = (
    "turn_id",
    "created_ms",
    "kind",
    "bundle_hash",
    "question",
    "withheld",
    "credential_kind",
    "confidence",
    "model_confidence",
    "tentative",
    "retriever",
    "rescued",
    "cited",
    "cited_pages",
    "closest",
    "provider",
    "model",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cost_micro_usd",
    "latency_ms",
    "verdict",
    "verdict_model",
    "verdict_cost_micro_usd",
)
JSON_COLUMNS = frozenset({"cited", "cited_pages", "closest", "latency_ms"})
BOOL_COLUMNS = frozenset({"tentative", "rescued"})

MIGRATIONS_TABLE = "docpilot_migrations"

# (version, statements); append new versions, never edit a released one.
MIGRATIONS: tuple[tuple[int, tuple[str, ...]], ...] = (
    (
        1,
        (
            """CREATE TABLE turns (
                turn_id TEXT PRIMARY KEY,
                created_ms BIGINT NOT NULL,
                kind TEXT NOT NULL,
                bundle_hash TEXT NOT NULL,
                question TEXT,
                withheld TEXT,
                credential_kind TEXT,
                confidence INTEGER,
                model_confidence INTEGER,
                tentative INTEGER NOT NULL DEFAULT 0,
                retriever TEXT,
                rescued INTEGER NOT NULL DEFAULT 0,
                cited TEXT NOT NULL DEFAULT '[]',
                cited_pages TEXT NOT NULL DEFAULT '[]',
                closest TEXT NOT NULL DEFAULT '[]',
                provider TEXT,
                model TEXT,
                input_tokens INTEGER NOT NULL DEFAULT 0,
                output_tokens INTEGER NOT NULL DEFAULT 0,
                cache_read_tokens INTEGER NOT NULL DEFAULT 0,
                cache_write_tokens INTEGER NOT NULL DEFAULT 0,
                cost_micro_usd BIGINT NOT NULL DEFAULT 0,
                latency_ms TEXT NOT NULL DEFAULT '{}',
                verdict TEXT
            )""",
            "CREATE INDEX turns_created ON turns (created_ms)",
            """CREATE TABLE feedback (
                turn_id TEXT PRIMARY KEY,
                created_ms BIGINT NOT NULL,
                rating TEXT NOT NULL,
                reasons TEXT NOT NULL DEFAULT '[]',
                note TEXT NOT NULL DEFAULT ''
            )""",
        ),
    ),
    (
        2,
        (
            # The second opinion's provenance, beside the `verdict` column of version 1.
            "ALTER TABLE turns ADD COLUMN verdict_model TEXT",
            "ALTER TABLE turns ADD COLUMN verdict_cost_micro_usd BIGINT NOT NULL DEFAULT 0",
            # The webhook outbox: one row per event and receiver URL, written in the same
            # transaction as the turn (or feedback) it reports, deleted never (retention
            # purges it with its turn). `event_id` is the idempotency key receivers see.
            """CREATE TABLE webhook_outbox (
                event_id TEXT NOT NULL,
                target TEXT NOT NULL,
                event_type TEXT NOT NULL,
                turn_id TEXT NOT NULL,
                created_ms BIGINT NOT NULL,
                body TEXT NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                next_attempt_ms BIGINT NOT NULL,
                delivered_ms BIGINT,
                failed_ms BIGINT,
                last_error TEXT,
                PRIMARY KEY (event_id, target)
            )""",
            "CREATE INDEX webhook_outbox_due ON webhook_outbox (next_attempt_ms)",
            "CREATE INDEX webhook_outbox_turn ON webhook_outbox (turn_id)",
        ),
    ),
    (
        3,
        (
            # Which versions of the credential check have swept the stored text
            # (records.rescreen), and what each removed.
            """CREATE TABLE docpilot_screened (
                version TEXT PRIMARY KEY,
                screened_ms BIGINT NOT NULL,
                questions INTEGER NOT NULL DEFAULT 0,
                notes INTEGER NOT NULL DEFAULT 0,
                events INTEGER NOT NULL DEFAULT 0
            )""",
        ),
    ),
)

# The few statements whose spelling differs between the two databases.
DIALECT_SQL: dict[str, dict[Dialect, str]] = {
    "create_migrations": {
        "sqlite": f"CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} "
        "(version INTEGER PRIMARY KEY, applied_ms BIGINT NOT NULL)",
        "postgres": f"CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} "
        "(version INTEGER PRIMARY KEY, applied_ms BIGINT NOT NULL)",
    },
    # Serialises migrations when several processes start at once.
    "lock_for_migrations": {
        "sqlite": "",  # the connection runs them under BEGIN IMMEDIATE
        "postgres": "SELECT pg_advisory_xact_lock(727571)",
    },
}

INSERT_TURN = (
    f"INSERT INTO turns ({', '.join(TURN_COLUMNS)}) "
    f"VALUES ({', '.join('?' for _ in TURN_COLUMNS)}) "
    "ON CONFLICT (turn_id) DO NOTHING"
)
UPSERT_FEEDBACK = (
    "INSERT INTO feedback (turn_id, created_ms, rating, reasons, note) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (turn_id) DO UPDATE SET created_ms = excluded.created_ms, "
    "rating = excluded.rating, reasons = excluded.reasons, note = excluded.note "
    "WHERE excluded.created_ms >= feedback.created_ms"
)
SET_VERDICT = (
    "UPDATE turns SET verdict = ?, verdict_model = ?, verdict_cost_micro_usd = ? "
    "WHERE turn_id = ?"
)
SELECT_TURNS = (
    f"SELECT {', '.join('t.' + c for c in TURN_COLUMNS)}, "
    "f.rating, f.reasons, f.note, f.created_ms "
    "FROM turns t LEFT JOIN feedback f ON f.turn_id = t.turn_id "
    "WHERE t.created_ms >= ? ORDER BY t.created_ms, t.turn_id"
)


def turn_row(record: TurnRecord) -> tuple[Any, ...]:
    """The record as a row of `turns`, in `TURN_COLUMNS` order."""
    data = record.to_dict()
    row: list[Any] = []
    for column in TURN_COLUMNS:
        value = data[column]
        if column in JSON_COLUMNS:
            value = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        elif column in BOOL_COLUMNS:
            value = int(bool(value))
        row.append(value)
    return tuple(row)


def feedback_row(record: FeedbackRecord) -> tuple[Any, ...]:
    reasons = json.dumps(list(record.reasons), separators=(",", ":"))
    return (record.turn_id, record.created_ms, record.rating, reasons, record.note)


def stored_turn(row: tuple[Any, ...]) -> dict[str, Any]:
    """A `SELECT_TURNS` row as a plain dict: the turn's fields plus its `feedback`."""
    width = len(TURN_COLUMNS)
    data: dict[str, Any] = {}
    for column, value in zip(TURN_COLUMNS, row[:width], strict=True):
        if column in JSON_COLUMNS:
            value = json.loads(value) if value else ([] if column != "latency_ms" else {})
        elif column in BOOL_COLUMNS:
            value = bool(value)
        data[column] = value
    rating, reasons, note, created = row[width:]
    data["feedback"] = (
        None
        if rating is None
        else {
            "rating": rating,
            "reasons": json.loads(reasons or "[]"),
            "note": note or "",
            "created_ms": created,
        }
    )
    return data
