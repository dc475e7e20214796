"""The `[records]` settings table: where turn records go, how long they stay, and whether
a reader must consent before their questions are stored."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_PATH = ".docpilot/records.sqlite3"
DEFAULT_RETENTION_DAYS = 90
MAX_RETENTION_DAYS = 36_500
RECORDS_KEYS = frozenset({"enabled", "path", "retention_days", "require_consent"})


@dataclass(frozen=True)
class RecordsSettings:
    """`path` is the SQLite file (and, beside it, the spool folder); a relative path is
    resolved against the settings file's folder, or the working folder without one.
    `retention_days` = 0 keeps records forever."""

    enabled: bool = True
    path: str = DEFAULT_PATH
    retention_days: int = DEFAULT_RETENTION_DAYS
    require_consent: bool = False

    def sqlite_path(self, base: Path | None = None) -> Path:
        file = Path(self.path).expanduser()
        return file if file.is_absolute() else (base or Path.cwd()) / file

    def spool_folder(self, base: Path | None = None) -> Path:
        file = self.sqlite_path(base)
        return file.with_name(file.name + ".spool")


def records_settings(table: Any, where: str) -> RecordsSettings:
    """Check a `[records]` table; errors name ``where`` and the key (raised as ValueError)."""
    if not isinstance(table, dict):
        raise ValueError(f"{where}: [records] must be a table")
    unknown = set(table) - RECORDS_KEYS
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {sorted(unknown)} in [records]")
    for key in ("enabled", "require_consent"):
        if key in table and not isinstance(table[key], bool):
            raise ValueError(f"{where}: [records] {key} must be true or false")
    path = table.get("path", DEFAULT_PATH)
    if not isinstance(path, str) or not path.strip():
        raise ValueError(f"{where}: [records] path must be a non-empty string")
    days = table.get("retention_days", DEFAULT_RETENTION_DAYS)
    if (
        not isinstance(days, int)
        or isinstance(days, bool)
        or not 0 <= days <= MAX_RETENTION_DAYS
    ):
        raise ValueError(
            f"{where}: [records] retention_days must be an integer from 0 to "
            f"{MAX_RETENTION_DAYS} (0 keeps records forever), got {days!r}"
        )
    return RecordsSettings(
        enabled=table.get("enabled", True),
        path=path,
        retention_days=days,
        require_consent=table.get("require_consent", False),
    )
