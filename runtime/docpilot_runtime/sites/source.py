"""Where the runtime's bundles come from, and how a newer set replaces the loaded one.

A source is the built site folder (the default) or the published site's URL
(`[bundle] url`): the site root (``https://docs.example.com/``), its
``docpilot/manifest.json``, or one ``docpilot/bundle.msgpack``. Either way the
manifest, when there is one, says which bundle serves which page prefix (language,
version); without one a folder is walked for bundles and a URL names its one bundle.
Versions laid out by mike (``1.0/``, ``2.0/`` beside ``versions.json``, each version
its own build with its own manifest) are found the same way: every manifest below the
root counts, its prefixes rebased under its folder.

Every bundle is checked before it serves: format and schema version (`parse_bundle`),
the manifest's sha256 when it lists one, at least one unit, and an embedder this
runtime can load when the bundle carries vectors. A replacement set is built completely
off the event loop and then swapped in with one assignment (`Runtime.sites`): a turn in
flight keeps the `Site` it started with, so it finishes on the old bundle and names the
old `bundle_hash` in its result and record; the next turn uses the new one. A set that
fails any check is refused whole, and the old one keeps serving.

URLs must be https, except on a loopback host or with `allow_http`. A pipeline asks for
a reload with a signed ``POST /api/bundle/reload`` (`verify_signature`), or the runtime
polls with ``If-None-Match`` (`poll_seconds`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx

from docpilot_runtime.bundle.read import parse_bundle
from docpilot_runtime.bundle.schema import BUNDLE_DIR, BUNDLE_NAME, BundleError
from docpilot_runtime.index.manifest import MANIFEST_FORMAT, MANIFEST_NAME
from docpilot_runtime.retrieve.site import Site
from docpilot_runtime.settings.bundle import BundleSettings, url_refusal
from docpilot_runtime.settings.embedder import QueryEmbedderSettings

log = logging.getLogger("docpilot.bundle")

# "sha256=" + hex HMAC of "<timestamp>.<nonce>.<body>"
SIGNATURE_HEADER = "X-DocPilot-Signature"
TIMESTAMP_HEADER = "X-DocPilot-Timestamp"  # Unix seconds, within SIGNATURE_MAX_AGE of now
NONCE_HEADER = "X-DocPilot-Nonce"  # new for every request: a used one is refused (replay)
SIGNATURE_MAX_AGE = 300  # seconds: an older signed request is refused
_NONCE = re.compile(r"[A-Za-z0-9_\-]{16,128}")
MANIFEST_REL = f"{BUNDLE_DIR}/{MANIFEST_NAME}"
BUNDLE_REL = f"{BUNDLE_DIR}/{BUNDLE_NAME}"
MIKE_VERSIONS = "versions.json"




@dataclass(frozen=True)
class Located:
    """One bundle to load: the prefix it serves and where its bytes are."""

    prefix: str
    where: str  # a file path or a URL
    sha256: str = ""  # the manifest's digest, "" when no manifest lists it
    language: str = ""
    version: str = ""


class SourceError(BundleError):
    """The source cannot be read (network, HTTP status, size); the message names it."""




def check_url(url: str, allow_http: bool) -> None:
    """https, or http on a loopback host or with ``allow_http``; else SourceError."""
    refusal = url_refusal(url, allow_http)
    if refusal is not None:
        raise SourceError(refusal)


def _prefix_under(base: str, prefix: str) -> str:
    """``prefix`` (a manifest's, "/" or "/de/") under the manifest's own folder ``base``."""
    joined = "/" + "/".join(p for p in (base.strip("/"), prefix.strip("/")) if p)
    return joined if joined == "/" else joined + "/"


def manifest_entries(data: Any, where: str, base: str = "/") -> list[Located]:
    """The bundles a decoded manifest lists; ``where`` names it in errors and locates
    the bundles (their paths are relative to the manifest's site root)."""
    if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT:
        raise BundleError(f"{where}: field 'format' should be {MANIFEST_FORMAT!r}")
    rows = data.get("bundles")
    if not isinstance(rows, list):
        raise BundleError(f"{where}: field 'bundles' should be a list")
    root = where.removesuffix(MANIFEST_REL)
    out = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or not all(
            isinstance(row.get(k), str) for k in ("prefix", "bundle", "sha256")
        ):
            raise BundleError(f"{where}: bundles[{i}] needs prefix, bundle and sha256 strings")
        rel = PurePosixPath(row["bundle"])
        if rel.is_absolute() or ".." in rel.parts:
            raise BundleError(f"{where}: bundles[{i}].bundle must stay under the site root")
        out.append(
            Located(
                prefix=_prefix_under(base, row["prefix"]),
                where=_join(root, rel.as_posix()),
                sha256=row["sha256"],
                language=str(row.get("language") or ""),
                version=str(row.get("version") or ""),
            )
        )
    return out


def _join(root: str, rel: str) -> str:
    if "://" in root:
        return urljoin(root if root.endswith("/") else root + "/", rel)
    return str(Path(root) / rel)


def mike_versions(root: Path) -> dict[str, str]:
    """Folder -> version name from mike's ``versions.json`` (aliases included)."""
    try:
        rows = json.loads((root / MIKE_VERSIONS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    names: dict[str, str] = {}
    for row in rows if isinstance(rows, list) else []:
        if isinstance(row, dict) and isinstance(row.get("version"), str):
            names[row["version"]] = row["version"]
            for alias in row.get("aliases") or []:
                if isinstance(alias, str):
                    names.setdefault(alias, row["version"])
    return names


def locate_in_folder(root: Path) -> list[Located]:
    """Every bundle under ``root``: as its manifests list them (any depth, mike's version
    folders included), plus any bundle no manifest lists, by where it lies."""
    found: dict[str, Located] = {}
    for manifest in sorted(root.rglob(MANIFEST_REL), key=lambda p: len(p.parts)):
        sub = manifest.parent.parent.relative_to(root).as_posix()
        base = "/" if sub == "." else f"/{sub}/"
        try:
            data = json.loads(manifest.read_text(encoding="utf-8"))
            entries = manifest_entries(data, str(manifest), base)
        except (OSError, ValueError) as exc:
            raise BundleError(f"{manifest}: not a readable manifest ({exc})") from None
        for entry in entries:
            found.setdefault(entry.prefix, entry)
    versions = mike_versions(root)
    for bundle in sorted(root.rglob(BUNDLE_REL)):
        sub = bundle.parent.parent.relative_to(root).as_posix()
        prefix = "/" if sub == "." else f"/{sub}/"
        if prefix not in found:
            found[prefix] = Located(prefix, str(bundle))
    for alias, target in linked_folders(root):
        for entry in list(found.values()):
            if entry.prefix.startswith(target):
                prefix = alias + entry.prefix.removeprefix(target)
                found.setdefault(prefix, replace(entry, prefix=prefix))
    out = []
    for entry in found.values():
        top = entry.prefix.strip("/").split("/", 1)[0]
        if not entry.version and top in versions:
            entry = Located(entry.prefix, entry.where, entry.sha256, entry.language, versions[top])
        out.append(entry)
    return sorted(out, key=lambda e: e.prefix)


def linked_folders(root: Path) -> list[tuple[str, str]]:
    """(alias prefix, target prefix) for each folder under ``root`` that is a symlink to
    another folder under it: mike 2.x publishes an alias (``latest``) as a symlink to its
    version's folder, and the pages under it are that version's, so its bundle serves
    them. Globbing does not follow symlinks, so they are looked for here; a link that
    leaves ``root`` is left alone, as the file server refuses what it points at."""
    real_root = root.resolve()
    out = []
    for folder, dirs, _files in os.walk(root):
        for name in sorted(dirs):
            path = Path(folder) / name
            if not path.is_symlink():
                continue
            target = path.resolve()
            if target.is_dir() and target.is_relative_to(real_root) and target != real_root:
                alias, points_at = path.relative_to(root), target.relative_to(real_root)
                out.append((_as_prefix(alias), _as_prefix(points_at)))
    return out


def _as_prefix(relative: Path) -> str:
    return f"/{relative.as_posix()}/"


@dataclass
class Fetched:
    """A URL's body, or None when the server said 304 Not Modified."""

    body: bytes | None
    etag: str = ""


class BundleSource:
    """Reads the bundle set from the site folder or `[bundle] url` and builds its Sites.
    Blocking: the app runs `load` in a worker thread."""

    def __init__(
        self,
        site_dir: str | os.PathLike[str],
        settings: BundleSettings | None = None,
        hosted: QueryEmbedderSettings | None = None,
    ) -> None:
        self.site_dir = Path(site_dir)
        self.settings = settings or BundleSettings()
        self.hosted = hosted or QueryEmbedderSettings()
        self.etag = ""  # of the manifest (or single bundle) last loaded from the URL
        self._pending_etag = ""
        self._prefetched: dict[str, bytes] = {}
        self._watched: set[Path] = set()  # a folder's files read by the last locate
        self.located_print: tuple[tuple[str, int, int], ...] = ()  # theirs, as read
        if self.settings.url:
            check_url(self.settings.url, self.settings.allow_http)

    @property
    def describe(self) -> str:
        return self.settings.url or str(self.site_dir)

    # -------------------------------------------------------------- reading bytes

    def _get(self, url: str, etag: str = "") -> Fetched:
        check_url(url, self.settings.allow_http)
        headers = {"If-None-Match": etag} if etag else {}
        limit = self.settings.max_bytes
        try:
            with (
                httpx.Client(timeout=self.settings.timeout, follow_redirects=False) as client,
                client.stream("GET", url, headers=headers) as response,
            ):
                if response.status_code == 304:
                    return Fetched(None, etag)
                if response.status_code != 200:
                    raise SourceError(f"{url}: HTTP {response.status_code}")
                body = bytearray()
                for piece in response.iter_bytes():
                    body += piece
                    if len(body) > limit:
                        raise SourceError(f"{url}: larger than [bundle] max_bytes ({limit})")
                return Fetched(bytes(body), response.headers.get("etag", ""))
        except httpx.HTTPError as exc:
            raise SourceError(f"{url}: cannot fetch ({type(exc).__name__}: {exc})") from None

    def _read(self, where: str) -> bytes:
        if where in self._prefetched:
            return self._prefetched.pop(where)
        if "://" in where:
            body = self._get(where).body
            assert body is not None  # no If-None-Match sent: never 304
            return body
        path = Path(where)
        try:
            if path.stat().st_size > self.settings.max_bytes:
                raise SourceError(f"{path}: larger than [bundle] max_bytes")
            return path.read_bytes()
        except FileNotFoundError:
            raise BundleError(
                f"{path}: no bundle here; build the site with the docpilot plugin "
                "or run `docpilot index SITE_DIR` first"
            ) from None

    def fingerprint(self) -> tuple[tuple[str, int, int], ...]:
        """Size and modification time of every file a folder's bundle set was read from
        (manifests, bundles, mike's versions.json; (-1, -1) when missing): a rebuild of
        the site changes it. A stat per file, no walk: cheap enough to poll."""
        out = []
        for path in sorted(self._watched):
            try:
                info = path.stat()
                out.append((str(path), info.st_size, info.st_mtime_ns))
            except OSError:
                out.append((str(path), -1, -1))
        return tuple(out)

    def locate(self, use_etag: bool = False) -> list[Located] | None:
        """The bundles the source lists now; None when the URL answered 304 to our ETag."""
        url = self.settings.url
        if not url:
            located = locate_in_folder(self.site_dir) or [
                Located("/", str(self.site_dir / BUNDLE_REL))  # let the read name the file
            ]
            root = self.site_dir
            self._watched = {root / MIKE_VERSIONS, root / MANIFEST_REL, root / BUNDLE_REL}
            self._watched.update(Path(e.where) for e in located)
            self._watched.update(Path(e.where).with_name(MANIFEST_NAME) for e in located)
            self.located_print = self.fingerprint()  # before reading: a later write shows
            return located
        path = urlsplit(url).path
        if path.endswith(".msgpack"):
            single = self._get(url, self.etag if use_etag else "")
            if single.body is None:
                return None
            self._prefetched = {url: single.body}
            self._pending_etag = single.etag
            return [Located("/", url)]
        manifest = url if path.endswith(".json") else urljoin(url.rstrip("/") + "/", MANIFEST_REL)
        fetched = self._get(manifest, self.etag if use_etag else "")
        if fetched.body is None:
            return None
        try:
            data = json.loads(fetched.body)
        except ValueError as exc:
            raise BundleError(f"{manifest}: not JSON ({exc})") from None
        self._pending_etag = fetched.etag
        return manifest_entries(data, manifest)

    # -------------------------------------------------------------- checking, building

    def load(self, current: Sequence[Site] = (), use_etag: bool = False) -> list[Site] | None:
        """Fetch, check and build every listed bundle (a Site already loaded with the same
        hash is kept as it is). None when nothing changed; BundleError when anything fails
        a check, naming the bundle and the check."""
        self._pending_etag, self._prefetched = "", {}
        located = self.locate(use_etag)
        if located is None:
            return None
        loaded = {(s.prefix, s.bundle.hash): s for s in current}
        sites = []
        built: dict[str, Site] = {}  # where -> its Site: an alias shares its target's
        for entry in located:
            kept = loaded.get((entry.prefix, entry.sha256)) if entry.sha256 else None
            if kept is None and entry.where in built:
                kept = replace(built[entry.where], prefix=entry.prefix)
                kept.language, kept.version = entry.language, entry.version
            site = kept if kept is not None else self._site(entry)
            built.setdefault(entry.where, site)
            sites.append(site)
        if current and {(s.prefix, s.bundle.hash) for s in sites} == set(loaded):
            self.etag = self._pending_etag or self.etag
            return None
        self.etag = self._pending_etag or self.etag
        return sites

    def _site(self, entry: Located) -> Site:
        from docpilot_runtime.sites.loader import (
            site_from_bundle,  # numpy and embedders: server side only
        )

        raw = self._read(entry.where)
        try:
            bundle = parse_bundle(raw, entry.where)  # hashed once, beside the decoding
        except BundleError:
            bundle = None  # a partial upload is reported as one below, not as bad msgpack
        digest = bundle.hash if bundle is not None else hashlib.sha256(raw).hexdigest()
        if entry.sha256 and digest != entry.sha256:
            raise BundleError(
                f"{entry.where}: sha256 {digest[:12]}… differs from the manifest's "
                f"{entry.sha256[:12]}… (a partial upload, or a stale manifest)"
            )
        if bundle is None:
            bundle = parse_bundle(raw, entry.where)  # raises the decoding error itself
        if not bundle.units:
            raise BundleError(f"{entry.where}: the bundle has no units (an empty index)")
        site = site_from_bundle(bundle, entry.prefix, self.hosted)
        site.language, site.version = entry.language, entry.version
        if bundle.embedder is not None and bundle.vectors is not None and site.embedder_error:
            raise BundleError(
                f"{entry.where}: embedder {bundle.embedder.name}:{bundle.embedder.model} "
                f"cannot be loaded by this runtime ({site.embedder_error})"
            )
        return site


def load_sites(
    site_dir: str | os.PathLike[str],
    settings: BundleSettings | None = None,
    hosted: QueryEmbedderSettings | None = None,
) -> tuple[BundleSource, list[Site]]:
    """The source and its first set of Sites (startup: errors name the bundle)."""
    source = BundleSource(site_dir, settings, hosted)
    sites = source.load()
    assert sites is not None  # no ETag on the first load
    return source, sites


def signature(secret: bytes, timestamp: str, nonce: str, body: bytes) -> str:
    """The value of SIGNATURE_HEADER for ``body`` sent at ``timestamp`` with ``nonce``."""
    signed = f"{timestamp}.{nonce}.".encode("ascii") + body
    return "sha256=" + hmac.new(secret, signed, hashlib.sha256).hexdigest()


def verify_signature(
    secret: bytes, timestamp: str | None, nonce: str | None, sent: str | None, body: bytes,
    now: float | None = None,
) -> str:
    """"" when the request is signed with ``secret`` and fresh, else why it is refused.
    Whether its nonce was used before is the caller's to check (`serve.bundle_swap`)."""
    if not timestamp or not nonce or not sent:
        return f"{TIMESTAMP_HEADER}, {NONCE_HEADER} and {SIGNATURE_HEADER} headers are required"
    try:
        age = abs((now if now is not None else time.time()) - int(timestamp))
    except ValueError:
        return f"{TIMESTAMP_HEADER} must be Unix seconds"
    if age > SIGNATURE_MAX_AGE:
        return f"{TIMESTAMP_HEADER} is more than {SIGNATURE_MAX_AGE} s from now"
    if not _NONCE.fullmatch(nonce):
        return f"{NONCE_HEADER} must be 16 to 128 letters, digits, '-' or '_'"
    if not hmac.compare_digest(signature(secret, timestamp, nonce, body), sent.strip()):
        return f"{SIGNATURE_HEADER} does not match"
    return ""


__all__ = [
    "NONCE_HEADER",
    "BundleSource",
    "Located",
    "SourceError",
    "check_url",
    "load_sites",
    "locate_in_folder",
    "manifest_entries",
    "signature",
    "verify_signature",
]
