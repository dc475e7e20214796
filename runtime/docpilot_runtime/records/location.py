"""Where the turn records live when `[records] path` does not say: the user's data folder.

Readers' questions are the owner's operational data, not part of the docs: kept in the
folder `docpilot serve` happened to start from they end up committed with a docs project;
kept in or beside the site output they are published, or emptied by the next clean build.
So by default they go to ``$XDG_DATA_HOME/docpilot/sites/<site folder>-<hash>/``
(``~/.local/share`` when the variable is unset), keyed by the served site folder's
absolute path like the embedding cache is keyed by the project: two sites never share
records, and a rebuilt site keeps its own. A ``site-folder.txt`` there names the site, so
`docpilot records` and `docpilot report` can list the sites that have records.
A `[records] path` (relative to the settings file) or ``DOCPILOT_DATABASE_URL`` (PostgreSQL)
replaces all of this; containers mount a volume there.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import replace
from pathlib import Path

from docpilot_runtime.records.store import RecordsError
from docpilot_runtime.settings.records import RecordsSettings

RECORDS_FILE = "records.sqlite3"
SITE_NOTE = "site-folder.txt"


def data_home() -> Path:
    """``$XDG_DATA_HOME/docpilot`` (``~/.local/share/docpilot`` by default)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "docpilot"


def site_records_dir(site_dir: str | os.PathLike[str]) -> Path:
    """The default records folder of one served site folder."""
    where = Path(site_dir).resolve()
    key = hashlib.sha256(str(where).encode()).hexdigest()[:12]
    return data_home() / "sites" / f"{where.name or 'root'}-{key}"


def records_settings(
    settings: RecordsSettings, base: Path | None, site_dir: str | os.PathLike[str]
) -> RecordsSettings:
    """``settings`` with an absolute ``path``: the configured one (relative to ``base``,
    the settings file's folder), else the site's default folder, which is created and
    labelled with the site it belongs to."""
    if settings.path:
        return replace(settings, path=str(settings.sqlite_path(base)))
    folder = site_records_dir(site_dir)
    folder.mkdir(parents=True, exist_ok=True)
    note = folder / SITE_NOTE
    label = f"{Path(site_dir).resolve()}\n"
    if not note.is_file() or note.read_text(encoding="utf-8") != label:
        note.write_text(label, encoding="utf-8")
    return replace(settings, path=str(folder / RECORDS_FILE))


def sites_with_records() -> dict[str, Path]:
    """Site folder -> its default records file, for every site that has one."""
    found = {}
    for folder in sorted((data_home() / "sites").glob("*/")):
        note, file = folder / SITE_NOTE, folder / RECORDS_FILE
        if note.is_file() and (file.is_file() or file.with_name(file.name + ".spool").is_dir()):
            found[note.read_text(encoding="utf-8").strip()] = file
    return found


class NoSiteChosen(RecordsError):
    """The default records were asked for without a site, and there is not exactly one."""


def default_records(settings: RecordsSettings, site_dir: str | None) -> RecordsSettings:
    """The records the owner's verbs read when `[records] path` is unset: ``site_dir``'s,
    or the one site's that has records; NoSiteChosen naming the choices otherwise."""
    if site_dir is not None:
        return replace(settings, path=str(site_records_dir(site_dir) / RECORDS_FILE))
    found = sites_with_records()
    if len(found) == 1:
        return replace(settings, path=str(next(iter(found.values()))))
    if not found:
        raise NoSiteChosen(
            f"no site has records in {data_home() / 'sites'} yet; pass --site SITE_DIR "
            "(the folder `docpilot serve` served) or --config with [records] path"
        )
    listed = "\n".join(f"  --site {site}" for site in found)
    raise NoSiteChosen(f"records of several sites are kept; choose one:\n{listed}")


__all__ = [
    "NoSiteChosen",
    "data_home",
    "default_records",
    "records_settings",
    "site_records_dir",
    "sites_with_records",
]
