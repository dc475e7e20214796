"""The `[records]` settings table: where turn records go, how long they stay, and whether
a reader must consent before their questions are stored."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from docpilot_runtime.settings.tables import RECORDS

_DEFAULTS = RECORDS.defaults()


@dataclass(frozen=True)
class RecordsSettings:
    """`path` is the SQLite file (and, beside it, the spool folder); a relative path is
    resolved against the settings file's folder, or the working folder without one; ""
    (the default) means the served site's folder in the user's data folder
    (`records.location`). `retention_days` = 0 keeps records forever."""

    enabled: bool = _DEFAULTS["enabled"]
    path: str = _DEFAULTS["path"]
    retention_days: int = _DEFAULTS["retention_days"]
    require_consent: bool = _DEFAULTS["require_consent"]

    def sqlite_path(self, base: Path | None = None) -> Path:
        if not self.path:  # the site's default needs the site: records.location
            raise ValueError("[records] path is unset; records_settings() resolves it")
        file = Path(self.path).expanduser()
        return file if file.is_absolute() else (base or Path.cwd()) / file

    def spool_folder(self, base: Path | None = None) -> Path:
        file = self.sqlite_path(base)
        return file.with_name(file.name + ".spool")
