"""Content-hash cache of embeddings, so an unchanged unit is never embedded twice.

Key: sha256(embedder name + model + dims + NUL + embedded text). The cache file is
rewritten after each build with exactly the entries that build used, so it never
grows past the site; the plugin hands every built page to each build (under `--dirty`
too, the pages MkDocs left alone read back from the site dir), so no build is partial
and none drops the units of pages it did not rebuild. A build that indexed nothing (every
page excluded, a pattern gone wrong) keeps every entry. A build that used exactly the
stored entries and added none leaves the file as it is. A cache that cannot be read is
rebuilt with a warning: it only ever saves time, it is never needed for correctness.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import msgpack
import numpy as np

from docpilot_runtime.bundle.write import write_atomic

CACHE_VERSION = 1


def default_cache_dir(project: Path) -> Path:
    """Where a project's embedding cache lives unless ``cache_dir`` says otherwise:
    ``$XDG_CACHE_HOME/docpilot/projects/<name>-<hash>/`` (``~/.cache`` by default), outside
    the project, so neither ``mkdocs build --clean``-style cleans nor ``zensical build
    --clean`` (which deletes ``.cache/``) remove it; keyed by the project directory's
    absolute path, so two projects never share one."""
    where = project.resolve()
    key = hashlib.sha256(str(where).encode()).hexdigest()[:12]
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "docpilot" / "projects" / f"{where.name or 'root'}-{key}"


def resolve_cache_dir(configured: str, project: Path) -> Path:
    """The cache folder for an option value: the schema's default means
    `default_cache_dir`; anything else is taken relative to ``project`` (the folder of
    mkdocs.yml for the plugin, the working folder for `docpilot index`)."""
    from docpilot_runtime.settings.index import DEFAULT_CACHE_DIR

    if configured == DEFAULT_CACHE_DIR:
        return default_cache_dir(project)
    return project / Path(configured).expanduser()


def cache_key(embedder_id: str, dims: int, text: str) -> bytes:
    return hashlib.sha256(f"{embedder_id}{dims}\0{text}".encode()).digest()


class EmbeddingCache:
    """Vectors by content hash, loaded from and saved to one msgpack file."""

    def __init__(self, path: Path, dims: int, warn: Callable[[str], None]) -> None:
        self.path = path
        self.dims = dims
        self.entries: dict[bytes, bytes] = {}
        self.used: dict[bytes, bytes] = {}
        self._added = False
        if path.exists():
            try:
                data = msgpack.unpackb(path.read_bytes(), raw=False, strict_map_key=False)
                if data.get("version") != CACHE_VERSION or data.get("dims") != dims:
                    raise ValueError("written by another version or for another width")
                entries = data["entries"]
                if not all(len(v) == dims * 4 for v in entries.values()):
                    raise ValueError("holds vectors of the wrong width")
                self.entries = entries
            except Exception as exc:
                warn(f"embedding cache {path} is unreadable ({exc}); rebuilding it")

    def get(self, key: bytes) -> np.ndarray | None:
        raw = self.entries.get(key)
        if raw is None:
            return None
        self.used[key] = raw
        return np.frombuffer(raw, dtype="<f4")

    def put(self, key: bytes, vector: np.ndarray) -> None:
        self.used[key] = np.asarray(vector, dtype="<f4").tobytes()
        self._added = True

    def save(self, prune: bool = True) -> None:
        """Write the entries this build used; ``prune=False`` keeps the unused ones too
        (a `mkdocs serve` rebuild that skipped the gate's probes must not drop theirs)."""
        kept = self.used if prune else {**self.entries, **self.used}
        if not self._added and kept.keys() == self.entries.keys() and self.path.exists():
            return  # nothing to add or drop: skip rewriting (and syncing) the file
        entries = dict(sorted(kept.items()))
        data = {"version": CACHE_VERSION, "dims": self.dims, "entries": entries}
        write_atomic(self.path, msgpack.packb(data, use_bin_type=True))
