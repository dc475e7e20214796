"""The durable queue in front of the records database: append-only JSON lines, fsynced.

A turn's record is appended (and fsynced) before the reader gets the final `answer`
event; the database write happens later. To drain, the writer renames the active file
aside (`take`), writes its entries, then deletes it (`done`). A crash anywhere in
between leaves the entries on disk, and the next start replays them (`pending`); the
database ignores a turn id it already has, so a replay loses nothing and duplicates
nothing. A line cut short by a crash (no newline) was never fsynced, so its turn's
answer was never sent: it is dropped.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

try:  # POSIX: several worker processes may share one spool folder
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger("docpilot.records")

ACTIVE = "spool.jsonl"
DRAINING = ".draining"


class Spool:
    """A folder of JSON-lines files: one being appended to, others being drained."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._serial = 0

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with self._lock, open(self.folder / "lock", "a+b") as handle:
            if fcntl is not None:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                if fcntl is not None:
                    fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def append(self, entry: dict[str, Any]) -> None:
        """Write one entry and fsync it: once this returns, a crash cannot lose it."""
        line = json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n"
        with self._locked():
            fd = os.open(self.folder / ACTIVE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line.encode("utf-8"))
                os.fsync(fd)
            finally:
                os.close(fd)

    def take(self) -> Path | None:
        """Move the active file aside for draining; None when nothing is waiting."""
        active = self.folder / ACTIVE
        with self._locked():
            if not active.exists() or active.stat().st_size == 0:
                return None
            self._serial += 1
            name = f"{time.time_ns():020d}-{os.getpid()}-{self._serial}{DRAINING}"
            target = self.folder / name
            os.replace(active, target)
            _fsync_dir(self.folder)
            return target

    def pending(self) -> list[Path]:
        """Every file a previous run left undrained, oldest first (start-up replay)."""
        self.take()
        return sorted(self.folder.glob(f"*{DRAINING}"))

    def done(self, path: Path) -> None:
        """The entries of ``path`` are in the database: forget them."""
        path.unlink(missing_ok=True)
        _fsync_dir(self.folder)

    def depth(self) -> int:
        """How many entries wait for the database (active and draining files)."""
        total = 0
        for path in [self.folder / ACTIVE, *self.folder.glob(f"*{DRAINING}")]:
            if path.exists():
                with path.open("rb") as handle:
                    total += sum(1 for line in handle if line.endswith(b"\n"))
        return total


def read_entries(path: Path) -> list[dict[str, Any]]:
    """The complete entries of one spool file; a torn or unreadable line is skipped."""
    entries = []
    data = path.read_bytes()
    for number, raw in enumerate(data.split(b"\n")[:-1], start=1):  # [-1]: after the last \n
        try:
            entry = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            log.error("%s: line %d is not a spool entry; skipped", path.name, number)
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    return entries


def _fsync_dir(folder: Path) -> None:
    """Make a rename or unlink durable (the directory entry itself)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
