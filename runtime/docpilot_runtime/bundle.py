"""The bundle: one msgpack map next to the built site, the only thing the runtime reads.

This module owns the schema: its keys, its version, how it is written (deterministic
and atomic) and how it is loaded and checked. Pure Python plus msgpack, so the
browser can load the same file; the server adds the dense index on top
(``retrieval.Corpus``).

Schema, version 1 (documented for owners in example-site's Reference > Bundle schema):

``format`` "docpilot-bundle" · ``version`` 1 · ``generator`` "docpilot X.Y.Z" ·
``site`` {name, url} · ``embedder`` nil | {name, model, dims, center: bin float32 | nil} ·
``vectors`` nil | {layout, dims, count, bits: bin} · ``pages`` [{url, title, ids}] ·
``units`` [{id, url, title, breadcrumb, text, page}] · ``lexical`` (see ``lexical``) ·
``gate`` (see ``gate``) · ``tools`` [..] · ``actions`` [..]
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgpack

FORMAT = "docpilot-bundle"
VERSION = 1
BUNDLE_DIR = "docpilot"
BUNDLE_NAME = "bundle.msgpack"


class BundleError(ValueError):
    """A bundle that cannot be used; the message names the file, the field and what
    was expected."""


def bundle_path(site_dir: str | os.PathLike[str]) -> Path:
    return Path(site_dir) / BUNDLE_DIR / BUNDLE_NAME


def encode_bundle(data: Mapping[str, Any]) -> bytes:
    """msgpack bytes; callers build maps in a fixed key order, so equal input gives
    equal bytes."""
    return msgpack.packb(data, use_bin_type=True)  # type: ignore[no-any-return]


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename, so a reader
    (or a failed build) never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@dataclass(frozen=True)
class Page:
    url: str
    title: str
    ids: frozenset[str]


@dataclass(frozen=True)
class UnitRecord:
    id: str
    url: str
    title: str
    breadcrumb: tuple[str, ...]
    text: str
    page: int


@dataclass
class Bundle:
    """A loaded, checked bundle. ``data`` keeps the raw map (binary blocks included)."""

    path: str
    hash: str
    data: dict[str, Any]
    pages: list[Page]
    units: list[UnitRecord]

    @property
    def site_name(self) -> str:
        return str(self.data.get("site", {}).get("name") or "this site")

    @property
    def embedder(self) -> dict[str, Any] | None:
        value = self.data.get("embedder")
        return value if isinstance(value, dict) else None

    @property
    def gate(self) -> dict[str, Any]:
        value = self.data.get("gate")
        return value if isinstance(value, dict) else {}


def _need(data: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in data:
        raise BundleError(f"{where}: missing field {key!r}")
    value = data[key]
    if not isinstance(value, kind):
        expected = (
            kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        )
        raise BundleError(
            f"{where}: field {key!r} should be {expected}, found {type(value).__name__}"
        )
    return value


def parse_bundle(raw: bytes, where: str) -> Bundle:
    """Decode and check a bundle's bytes. ``where`` names the file in errors."""
    try:
        data = msgpack.unpackb(raw, raw=False, strict_map_key=True)
    except Exception as exc:  # msgpack raises several unrelated types
        raise BundleError(
            f"{where}: not a msgpack bundle ({exc.__class__.__name__}: {exc})"
        ) from None
    if not isinstance(data, dict):
        raise BundleError(f"{where}: expected a msgpack map at the top level")
    fmt = data.get("format")
    if fmt != FORMAT:
        raise BundleError(f"{where}: field 'format' should be {FORMAT!r}, found {fmt!r}")
    version = data.get("version")
    if version != VERSION:
        raise BundleError(
            f"{where}: field 'version' is {version!r}, this runtime reads version {VERSION}; "
            "rebuild the site with the same DocPilot version as the runtime"
        )
    pages = [
        Page(url=str(p["url"]), title=str(p["title"]), ids=frozenset(p["ids"]))
        for p in _need(data, "pages", list, where)
    ]
    units = [
        UnitRecord(
            id=u["id"],
            url=u["url"],
            title=u["title"],
            breadcrumb=tuple(u["breadcrumb"]),
            text=u["text"],
            page=int(u["page"]),
        )
        for u in _need(data, "units", list, where)
    ]
    _need(data, "lexical", dict, where)
    embedder = data.get("embedder")
    vectors = data.get("vectors")
    if embedder is not None:
        dims = _need(embedder, "dims", int, f"{where}: embedder")
        _need(embedder, "name", str, f"{where}: embedder")
        if vectors is None:
            raise BundleError(f"{where}: field 'vectors' is missing but 'embedder' is set")
        if vectors.get("dims") != dims:
            raise BundleError(
                f"{where}: field 'vectors.dims' is {vectors.get('dims')!r}, "
                f"expected the embedder width {dims}"
            )
        if vectors.get("count") != len(units):
            raise BundleError(
                f"{where}: field 'vectors.count' is {vectors.get('count')!r}, "
                f"expected one vector per unit ({len(units)})"
            )
        bits = _need(vectors, "bits", bytes, f"{where}: vectors")
        if len(bits) != len(units) * dims // 8:
            raise BundleError(
                f"{where}: field 'vectors.bits' holds {len(bits)} bytes, "
                f"expected {len(units)} units x {dims // 8} bytes"
            )
    return Bundle(
        path=where,
        hash=hashlib.sha256(raw).hexdigest(),
        data=data,
        pages=pages,
        units=units,
    )


def load_bundle(site_dir: str | os.PathLike[str]) -> Bundle:
    """Load ``<site_dir>/docpilot/bundle.msgpack``."""
    path = bundle_path(site_dir)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise BundleError(
            f"{path}: no bundle here; build the site with the docpilot plugin "
            "or run `docpilot index SITE_DIR` first"
        ) from None
    return parse_bundle(raw, str(path))
