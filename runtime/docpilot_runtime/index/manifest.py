"""The site root's list of bundles: one per language (and version) prefix.

A multi-language build writes one bundle per language, each under its own prefix
(``/`` for the default language, ``/de/`` for German); ``docpilot/manifest.json`` at
the site root lists them, so nothing has to guess which bundle serves which pages.
Each build records its own entry and keeps the others, so the languages of one build
(written one after the other) never overwrite each other.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from docpilot_runtime.bundle.schema import BUNDLE_DIR
from docpilot_runtime.bundle.write import write_atomic

MANIFEST_NAME = "manifest.json"
MANIFEST_FORMAT = "docpilot-manifest"
MANIFEST_VERSION = 1


@dataclass(frozen=True)
class ManifestEntry:
    prefix: str  # the URL prefix its pages are served under: "/", "/de/"
    language: str  # the pages' language ("de"), "" when unknown
    version: str  # the docs version, "" when the site has none
    bundle: str  # the bundle's path from the site root: "de/docpilot/bundle.msgpack"
    sha256: str  # hex digest of the bundle's bytes (its bundle_hash)


def manifest_path(site_root: Path) -> Path:
    return site_root / BUNDLE_DIR / MANIFEST_NAME


def bundle_entry(site_root: Path, bundle: Path, language: str, version: str = "") -> ManifestEntry:
    """The entry for a bundle written under ``site_root``."""
    rel = bundle.relative_to(site_root).as_posix()
    sub = rel.removesuffix(f"{BUNDLE_DIR}/{bundle.name}").rstrip("/")
    return ManifestEntry(
        prefix=f"/{sub}/" if sub else "/",
        language=language,
        version=version,
        bundle=rel,
        sha256=hashlib.sha256(bundle.read_bytes()).hexdigest(),
    )


def read_manifest(site_root: Path) -> list[ManifestEntry]:
    """The entries recorded so far; none when there is no readable manifest."""
    try:
        data = json.loads(manifest_path(site_root).read_text(encoding="utf-8"))
        if data.get("format") != MANIFEST_FORMAT:
            return []
        return [ManifestEntry(**row) for row in data["bundles"]]
    except (OSError, ValueError, KeyError, TypeError):
        return []  # missing or from another version: this build writes a fresh one


def record_bundle(site_root: Path, entry: ManifestEntry) -> Path:
    """Add or replace ``entry`` (by prefix) in the site root's manifest; return its path."""
    kept = [e for e in read_manifest(site_root) if e.prefix != entry.prefix]
    rows = sorted([*kept, entry], key=lambda e: e.prefix)
    data = {
        "format": MANIFEST_FORMAT,
        "version": MANIFEST_VERSION,
        "bundles": [asdict(e) for e in rows],
    }
    path = manifest_path(site_root)
    payload = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    write_atomic(path, payload.encode("utf-8"))
    return path


def refresh_bundle(site_root: Path, bundle: Path) -> Path:
    """Record ``bundle``, just rewritten under ``site_root``, keeping the language and
    version its entry had: `docpilot index` re-indexes a built site whose manifest still
    names the bundle's earlier bytes (and the runtime refuses a bundle whose sha256 the
    manifest contradicts)."""
    rel = bundle.relative_to(site_root).as_posix()
    old = next((e for e in read_manifest(site_root) if e.bundle == rel), None)
    language, version = (old.language, old.version) if old else ("", "")
    return record_bundle(site_root, bundle_entry(site_root, bundle, language, version))
