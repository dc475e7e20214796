"""Real `mkdocs build`s shared by every test process of a session (and by later sessions).

Most tests that build a site only read what the build wrote, and many build the same
site: each such build runs once. It lives under pytest's cache directory, in a folder
named by a hash of everything the build reads: what the caller says it writes (its
`key`: pages, options), the folders it builds from (`inputs`, hashed by content), the
package's source and the test helpers, and the installed distributions' versions (not
the package's version number). A file lock makes pytest-xdist's workers wait for the
one that builds. Folders of another source are removed when a session starts.

A shared build is read, never changed: a test that edits a built site copies it first
(`SharedBuild.copy_to`), and each hand-out checks that no file of the build changed
since it was made (sizes and modification times), failing with the file's name if one
did. Tests of the build itself (dirty, strict, serve rebuilds) run their own builds.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from corpora import ROOT, mkdocs_build, reduced_config
from filelock import FileLock

# What a build runs: the plugin, the runtime it imports, the widget it copies, and the
# helpers that write the projects (this folder's top-level modules, the Chromium ones).
SOURCE = (
    ROOT / "mkdocs_docpilot",
    ROOT / "runtime" / "docpilot_runtime",
    ROOT / "widget",
    ROOT / "tests",
    ROOT / "pyproject.toml",
    ROOT / "package-lock.json",
)
# Not read by a build, or made from what is hashed (the Pyodide files from package-lock).
SKIPPED_NAMES = {"__pycache__", ".cache", "site", "pyodide-core", "test-results", ".pytest_cache"}
RESULT = "build.json"  # written last: its presence says the build is complete


def _files(path: Path) -> Iterable[Path]:
    if path.is_file():
        yield path
        return
    for folder, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_NAMES)
        for name in sorted(files):
            if not name.endswith(".pyc"):
                yield Path(folder) / name


def content_digest(paths: Iterable[Path], *extra: str) -> str:
    """A hash of the files under ``paths`` (names and bytes) and of ``extra`` strings."""
    digest = hashlib.sha256()
    for path in paths:
        for file in _files(path):
            digest.update(str(file.relative_to(path.parent)).encode() + b"\0")
            digest.update(hashlib.sha256(file.read_bytes()).digest())
    for text in extra:
        digest.update(text.encode() + b"\0")
    return digest.hexdigest()[:16]


def source_digest() -> str:
    """The package's source, the test helpers and every installed distribution's version."""
    versions = sorted(
        f"{dist.metadata['Name']}=={dist.version}" for dist in metadata.distributions()
    )
    return content_digest(SOURCE, sys.version, *versions)


def _manifest(site: Path) -> dict[str, list[int]]:
    """Every file of a built site with its size and modification time."""
    found = {}
    for folder, _dirs, files in os.walk(site):
        for name in files:
            stat = (Path(folder) / name).stat()
            found[os.path.relpath(Path(folder) / name, site)] = [stat.st_size, stat.st_mtime_ns]
    return found


@dataclass(frozen=True)
class SharedBuild:
    """A finished build: its folder (the project, when the caller wrote it there), the
    site it wrote and what `mkdocs build` printed."""

    folder: Path
    site: Path
    stdout: str
    stderr: str

    def copy_to(self, target: Path) -> Path:
        """A private copy of the built site, for a test that changes it."""
        shutil.copytree(self.site, target, symlinks=True)
        return target


SharedSite = Callable[..., SharedBuild]  # conftest's `shared_site`: (pages, plugin, **config)


class SiteBuilds:
    """The shared builds under ``root`` (pytest's cache folder for them)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.source = source_digest()
        self.builds = root / self.source
        self.builds.mkdir(parents=True, exist_ok=True)

    def remove_other_sources(self) -> None:
        """Drop builds of another source (run once per session, before any test)."""
        for folder in self.root.iterdir():
            if folder.is_dir() and folder.name != self.source:
                shutil.rmtree(folder, ignore_errors=True)

    def get(
        self,
        key: Mapping[str, Any],
        build: Callable[[Path], subprocess.CompletedProcess[str]],
        inputs: Iterable[Path] = (),
        site: str = "site",
    ) -> SharedBuild:
        """The build ``build(folder)`` makes in an empty ``folder`` (its site in
        ``folder/<site>``), run once per ``key`` and content of ``inputs``: ``key`` must name
        everything the build writes or reads besides ``inputs`` and the package."""
        name = content_digest(inputs, json.dumps(key, sort_keys=True, default=str))
        folder = self.builds / name
        with FileLock(str(folder) + ".lock"):
            result = folder / RESULT
            if not result.is_file():
                shutil.rmtree(folder, ignore_errors=True)
                folder.mkdir()
                try:
                    done = build(folder)
                except BaseException:
                    shutil.rmtree(folder, ignore_errors=True)
                    raise
                written = {"key": key, "stdout": done.stdout, "stderr": done.stderr,
                           "files": _manifest(folder / site)}
                partial = folder / (RESULT + ".tmp")
                partial.write_text(json.dumps(written, default=str), encoding="utf-8")
                partial.replace(result)
            recorded = json.loads(result.read_text(encoding="utf-8"))
        changed = _changed(recorded["files"], _manifest(folder / site))
        if changed:
            pytest.fail(f"a test changed the shared build {folder} ({key}): "
                        f"{', '.join(changed[:5])}; copy it first (SharedBuild.copy_to)")
        return SharedBuild(folder, folder / site, recorded["stdout"], recorded["stderr"])


def _changed(recorded: dict[str, list[int]], now: dict[str, list[int]]) -> list[str]:
    """Files added, removed or rewritten since the build."""
    return sorted(p for p in recorded.keys() | now.keys() if recorded.get(p) != now.get(p))


def reduced_site(builds: SiteBuilds, corpus: Path, plugin: dict[str, Any] | None = None) -> Path:
    """``corpus`` built with `reduced_config` and the plugin's options ``plugin`` (its
    embedding cache in the build's folder), once; the built site."""
    options = {**(plugin or {}), "cache_dir": "cache"}
    return builds.get(
        {"reduced_config": corpus.name, "plugin": options},
        lambda work: mkdocs_build(reduced_config(corpus, work, options)),
        inputs=[corpus],
    ).site
