"""Reading a bundle: every field decoded and checked, errors naming file and field."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable, Mapping, Sequence
from itertools import chain
from typing import Any, TypeVar

from docpilot_runtime.bundle.schema import (
    FORMAT,
    LEXICAL_BLOCKS,
    SIGNALS,
    STATIC_FORMAT,
    STATIC_NAME,
    UNIT_FIELDS,
    VERSION,
    WRITTEN_BY,
    Anchor,
    Bm25Params,
    Bundle,
    BundleError,
    EmbedderInfo,
    Gate,
    GateParams,
    IdSet,
    LexicalBlock,
    Page,
    SiteInfo,
    UnitColumns,
    Vectors,
    bundle_path,
)

T = TypeVar("T")


class _Reader:
    """Typed field access that names the file and the dotted field path on failure."""

    def __init__(self, where: str, binary: Callable[[Any, str], bytes]) -> None:
        self.where = where
        self.binary = binary

    def fail(self, path: str, expected: str, value: Any = None, found: bool = True) -> BundleError:
        seen = f", found {type(value).__name__}" if found else ", but it is missing"
        return BundleError(f"{self.where}: field {path!r} should be {expected}{seen}")

    def mapping(self, value: Any, path: str) -> Mapping[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(path, "a map", value)
        return value

    def text(self, data: Mapping[str, Any], key: str, path: str) -> str:
        value = self._field(data, key, path, "a string")
        if not isinstance(value, str):
            raise self.fail(_join(path, key), "a string", value)
        return value

    def integer(self, data: Mapping[str, Any], key: str, path: str, low: int = 0) -> int:
        value = self._field(data, key, path, "an integer")
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise self.fail(_join(path, key), f"an integer >= {low}", value)
        return value

    def number(self, data: Mapping[str, Any], key: str, path: str) -> float:
        value = self._field(data, key, path, "a number")
        if not isinstance(value, int | float) or isinstance(value, bool) or value != value:
            raise self.fail(_join(path, key), "a number", value)
        return float(value)

    def array(self, data: Mapping[str, Any], key: str, path: str) -> list[Any]:
        value = self._field(data, key, path, "a list")
        if not isinstance(value, list):
            raise self.fail(_join(path, key), "a list", value)
        return value

    def blob(self, data: Mapping[str, Any], key: str, path: str) -> bytes:
        return self.binary(self._field(data, key, path, "binary data"), _join(path, key))

    def sub(self, data: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any]:
        return self.mapping(self._field(data, key, path, "a map"), _join(path, key))

    def _field(self, data: Mapping[str, Any], key: str, path: str, expected: str) -> Any:
        if key not in data:
            raise self.fail(_join(path, key), expected, found=False)
        return data[key]


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _optional_text(read: _Reader, data: Mapping[str, Any], key: str, path: str) -> str:
    """A string field that may be nil or absent (then "")."""
    return "" if data.get(key) is None else read.text(data, key, path)


def _strings(read: _Reader, values: Any, path: str) -> tuple[str, ...]:
    if not isinstance(values, list):
        raise read.fail(path, "a list of strings", values)
    for i, value in enumerate(values):
        if not isinstance(value, str):
            raise read.fail(f"{path}[{i}]", "a string", value)
    return tuple(values)


def _site(read: _Reader, data: Mapping[str, Any]) -> SiteInfo:
    site = read.sub(data, "site", "")
    return SiteInfo(
        name=read.text(site, "name", "site"), url=_optional_text(read, site, "url", "site")
    )


def _embedder(read: _Reader, data: Mapping[str, Any]) -> EmbedderInfo | None:
    value = data.get("embedder")
    if value is None:
        return None
    raw = read.mapping(value, "embedder")
    dims = read.integer(raw, "dims", "embedder", low=64)
    if dims % 64:
        raise read.fail("embedder.dims", "a multiple of 64", dims)
    model = _optional_text(read, raw, "model", "embedder")
    center = None
    if raw.get("center") is not None:
        center = read.blob(raw, "center", "embedder")
        if len(center) != dims * 4:
            raise BundleError(
                f"{read.where}: field 'embedder.center' holds {len(center)} bytes, "
                f"expected {dims} float32 values ({dims * 4} bytes)"
            )
    return EmbedderInfo(
        name=read.text(raw, "name", "embedder"), model=model, dims=dims, center=center
    )


def _vectors(
    read: _Reader, data: Mapping[str, Any], embedder: EmbedderInfo | None, units: int
) -> Vectors | None:
    value = data.get("vectors")
    if embedder is None:
        if value is not None:
            raise BundleError(f"{read.where}: field 'vectors' is set but 'embedder' is nil")
        return None
    if value is None:
        raise BundleError(f"{read.where}: field 'vectors' is missing but 'embedder' is set")
    raw = read.mapping(value, "vectors")
    dims = read.integer(raw, "dims", "vectors")
    if dims != embedder.dims:
        raise BundleError(
            f"{read.where}: field 'vectors.dims' is {dims}, expected the embedder width "
            f"{embedder.dims}"
        )
    count = read.integer(raw, "count", "vectors")
    if count != units:
        raise BundleError(
            f"{read.where}: field 'vectors.count' is {count}, expected one vector per unit "
            f"({units})"
        )
    bits = read.blob(raw, "bits", "vectors")
    if len(bits) != units * dims // 8:
        raise BundleError(
            f"{read.where}: field 'vectors.bits' holds {len(bits)} bytes, expected {units} "
            f"units x {dims // 8} bytes"
        )
    return Vectors(layout=read.text(raw, "layout", "vectors"), dims=dims, count=count, bits=bits)


def _all(kind: type, values: Sequence[Any]) -> bool:
    """Every value is exactly of ``kind`` (one C-speed pass: the common, valid case)."""
    return not values or set(map(type, values)) == {kind}


def _first_not(kind: type, values: Sequence[Any]) -> int:
    return next(i for i, v in enumerate(values) if type(v) is not kind)


def _string_lists(read: _Reader, values: list[Any], path: str) -> list[tuple[str, ...]]:
    """Each entry a list of strings, as tuples; the failure names the entry."""
    if _all(list, values) and _all(str, list(chain.from_iterable(values))):
        return list(map(tuple, values))
    return [_strings(read, value, f"{path}[{i}]") for i, value in enumerate(values)]


def _pages(read: _Reader, data: Mapping[str, Any]) -> tuple[Page, ...]:
    values = read.array(data, "pages", "")
    if not _all(dict, values):
        i = _first_not(dict, values)
        raise read.fail(f"pages[{i}]", "a map", values[i])
    columns = {}
    for name in ("url", "title", "ids"):
        column = [v.get(name) for v in values]
        kind, expected = (list, "a list") if name == "ids" else (str, "a string")
        if not _all(kind, column):
            i = _first_not(kind, column)
            found = name in values[i]
            raise read.fail(f"pages[{i}].{name}", expected, column[i], found=found)
        columns[name] = column
    ids = _string_lists(read, columns["ids"], "pages.ids")
    return tuple(
        map(Page, columns["url"], columns["title"], map(IdSet, ids), ids)
    )


def _units(read: _Reader, data: Mapping[str, Any], pages: int) -> UnitColumns:
    raw = read.sub(data, "units", "")
    columns = {name: read.array(raw, name, "units") for name in UNIT_FIELDS}
    count = len(columns["id"])
    for name, column in columns.items():
        if len(column) != count:
            raise BundleError(
                f"{read.where}: field 'units.{name}' has {len(column)} entries, expected "
                f"one per unit ({count}, as in 'units.id')"
            )
    for name in ("id", "url", "title", "text"):
        if not _all(str, columns[name]):
            i = _first_not(str, columns[name])
            raise read.fail(f"units.{name}[{i}]", "a string", columns[name][i])
    breadcrumbs = columns["breadcrumb"]
    if not (_all(list, breadcrumbs) and _all(str, list(chain.from_iterable(breadcrumbs)))):
        _string_lists(read, breadcrumbs, "units.breadcrumb")  # raises, naming the entry
    page = columns["page"]
    if not (_all(int, page) and (not page or (min(page) >= 0 and max(page) < pages))):
        i = next(i for i, v in enumerate(page) if type(v) is not int or not 0 <= v < pages)
        raise BundleError(
            f"{read.where}: field 'units.page[{i}]' should be a page index in "
            f"0..{pages - 1}, found {page[i]!r}"
        )
    return UnitColumns(
        columns["id"], columns["url"], columns["title"], breadcrumbs, columns["text"], page
    )


def decode_lexical(read: _Reader, data: Mapping[str, Any], units: int) -> LexicalBlock:
    raw = read.sub(data, "lexical", "")
    params = read.sub(raw, "params", "lexical")
    boosts = read.sub(params, "boosts", "lexical.params")
    boost_pairs = tuple(
        (name, read.integer(boosts, name, "lexical.params.boosts"))
        for name in ("title", "breadcrumb", "text")
    )
    count = read.integer(raw, "count", "lexical")
    if count != units:
        raise BundleError(
            f"{read.where}: field 'lexical.count' is {count}, expected one entry per unit ({units})"
        )
    doc_dtype = read.text(raw, "doc_dtype", "lexical")
    if doc_dtype not in ("u2", "u4"):
        raise read.fail("lexical.doc_dtype", '"u2" or "u4"', doc_dtype)
    blocks = {key: read.blob(raw, key, "lexical") for key in LEXICAL_BLOCKS}
    terms = blocks["terms"].count(b"\n") + 1 if blocks["terms"] else 0
    expected = {"offsets": 4 * (terms + 1), "lengths": 4 * count}
    for key, size in expected.items():
        if len(blocks[key]) != size:
            raise BundleError(
                f"{read.where}: field 'lexical.{key}' holds {len(blocks[key])} bytes, expected "
                f"{size} ({'4 x (terms + 1)' if key == 'offsets' else '4 x units'})"
            )
    postings = int.from_bytes(blocks["offsets"][-4:], "little") if terms else 0
    width = 2 if doc_dtype == "u2" else 4
    if len(blocks["docs"]) != postings * width or len(blocks["tfs"]) != postings:
        raise BundleError(
            f"{read.where}: fields 'lexical.docs' and 'lexical.tfs' hold {len(blocks['docs'])} "
            f"and {len(blocks['tfs'])} bytes, expected {postings} postings x {width} and x 1 "
            "(the last offset)"
        )
    try:
        blocks["terms"].decode("utf-8")
    except UnicodeDecodeError:
        raise read.fail("lexical.terms", "UTF-8 text", blocks["terms"]) from None
    return LexicalBlock(
        variant=read.text(raw, "variant", "lexical"),
        params=Bm25Params(
            k1=read.number(params, "k1", "lexical.params"),
            b=read.number(params, "b", "lexical.params"),
            delta=read.number(params, "delta", "lexical.params"),
            boosts=boost_pairs,
        ),
        count=count,
        avg_length=read.number(raw, "avg_length", "lexical"),
        doc_dtype=doc_dtype,
        doc_encoding=read.text(raw, "doc_encoding", "lexical"),
        **blocks,
    )


def _gate_params(read: _Reader, raw: Mapping[str, Any], path: str) -> GateParams:
    weights_raw = read.sub(raw, "weights", path)
    anchors_raw = read.sub(raw, "anchors", path)
    weights = {name: read.number(weights_raw, name, f"{path}.weights") for name in weights_raw}
    for name in weights:
        if name not in SIGNALS:
            raise BundleError(
                f"{read.where}: field '{path}.weights' names {name!r}, expected only "
                f"{', '.join(SIGNALS)}"
            )
    anchors = {}
    for name in weights:
        anchor = read.sub(anchors_raw, name, f"{path}.anchors")
        where = f"{path}.anchors.{name}"
        anchors[name] = Anchor(
            uncovered=read.number(anchor, "uncovered", where),
            covered=read.number(anchor, "covered", where),
        )
    samples: dict[str, int] = {}
    if raw.get("samples") is not None:
        samples_raw = read.sub(raw, "samples", path)
        samples = {str(k): read.integer(samples_raw, k, f"{path}.samples") for k in samples_raw}
    return GateParams(
        weights=weights,
        anchors=anchors,
        threshold=read.number(raw, "threshold", path),
        samples=samples,
    )


def _gate(read: _Reader, data: Mapping[str, Any]) -> Gate:
    raw = read.mapping({} if data.get("gate") is None else data["gate"], "gate")
    method = _optional_text(read, raw, "method", "gate")
    modes = {
        mode: _gate_params(read, read.mapping(raw[mode], f"gate.{mode}"), f"gate.{mode}")
        for mode in ("lexical", "hybrid")
        if raw.get(mode) is not None
    }
    return Gate(method=method, **modes)


def gate_from_static(data: Mapping[str, Any], where: str) -> Gate:
    """The ``gate`` field of a static index or a sharded one's manifest."""
    return _gate(_Reader(where, _Base64(where)), data)


def _declared(read: _Reader, data: Mapping[str, Any], key: str) -> tuple[Mapping[str, Any], ...]:
    found = []
    for i, value in enumerate(read.array(data, key, "") if key in data else []):
        entry = read.mapping(value, f"{key}[{i}]")
        read.text(entry, "name", f"{key}[{i}]")
        found.append(entry)
    return tuple(found)


def _check_header(read: _Reader, data: Any, fmt: str) -> Mapping[str, Any]:
    if not isinstance(data, dict):
        raise BundleError(f"{read.where}: expected a map at the top level")
    if data.get("format") != fmt:
        raise BundleError(
            f"{read.where}: field 'format' should be {fmt!r}, found {data.get('format')!r}"
        )
    version = data.get("version")
    if version != VERSION:
        writer = WRITTEN_BY.get(version) if isinstance(version, int) else None
        written = f"written by {writer}" if writer else "not written by any docpilot release"
        raise BundleError(
            f"{read.where}: schema version {version!r} ({written}); this runtime reads "
            f"version {VERSION} ({WRITTEN_BY[VERSION]}): rebuild the site with the same "
            "DocPilot version as the runtime"
        )
    return data


def decode_bundle(
    data: Any, where: str, digest: str, binary: Callable[[Any, str], bytes] | None = None
) -> Bundle:
    """Check decoded msgpack values into a Bundle; ``where`` names the file in errors."""
    read = _Reader(where, binary or _Binary(where))
    raw = _check_header(read, data, FORMAT)
    return _decode_parts(read, raw, where, digest)


def _decode_parts(read: _Reader, raw: Mapping[str, Any], where: str, digest: str) -> Bundle:
    pages = _pages(read, raw)
    units = _units(read, raw, len(pages))
    embedder = _embedder(read, raw)
    generator = _optional_text(read, raw, "generator", "")
    return Bundle(
        path=where,
        hash=digest,
        version=VERSION,
        generator=generator,
        site=_site(read, raw),
        embedder=embedder,
        vectors=_vectors(read, raw, embedder, len(units)),
        pages=pages,
        units=units,
        lexical=decode_lexical(read, raw, len(units)),
        gate=_gate(read, raw),
        tools=_declared(read, raw, "tools"),
        actions=_declared(read, raw, "actions"),
    )


class _Binary:
    """msgpack's bin type."""

    def __init__(self, where: str) -> None:
        self.where = where

    def __call__(self, value: Any, path: str) -> bytes:
        if not isinstance(value, bytes):
            raise BundleError(
                f"{self.where}: field {path!r} should be binary data, found {type(value).__name__}"
            )
        return value


class _Base64:
    """The static index's binary blocks: base64 text."""

    def __init__(self, where: str) -> None:
        self.where = where

    def __call__(self, value: Any, path: str) -> bytes:
        if not isinstance(value, str):
            raise BundleError(
                f"{self.where}: field {path!r} should be base64 text, found {type(value).__name__}"
            )
        try:
            return base64.b64decode(value, validate=True)
        except ValueError:
            raise BundleError(f"{self.where}: field {path!r} is not valid base64") from None


def parse_bundle(raw: bytes, where: str) -> Bundle:
    """Decode and check a bundle's bytes. ``where`` names the file in errors.

    The sha256 of the bytes (the bundle's identity, which every result carries and a
    manifest's digest is checked against) is computed in a second thread while msgpack
    decodes in this one: hashlib lets go of the interpreter lock, so on two cores the
    hash costs no wall time."""
    import hashlib  # here: static mode reads static.json, whose hash the build wrote
    from concurrent.futures import ThreadPoolExecutor

    import msgpack

    with ThreadPoolExecutor(1, thread_name_prefix="bundle-sha256") as pool:
        hashed = pool.submit(hashlib.sha256, raw)
        try:
            data = msgpack.unpackb(raw, raw=False, strict_map_key=True)
        except Exception as exc:  # msgpack raises several unrelated types
            raise BundleError(
                f"{where}: not a msgpack bundle ({exc.__class__.__name__}: {exc})"
            ) from None
        digest = hashed.result().hexdigest()
    return decode_bundle(data, where, digest)


def decode_static(text: str | bytes, where: str = STATIC_NAME) -> Bundle:
    """The static index (``encode_static``'s bytes) as a Bundle with no vectors."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise BundleError(
            f"{where}: not a static index ({exc.__class__.__name__}); static mode reads "
            f"docpilot/{STATIC_NAME}, not the msgpack bundle"
        ) from None
    read = _Reader(where, _Base64(where))
    raw = _check_header(read, data, STATIC_FORMAT)
    digest = read.text(raw, "bundle_hash", "")
    if raw.get("embedder") is not None or raw.get("vectors") is not None:
        raise BundleError(
            f"{where}: fields 'embedder' and 'vectors' should be nil in a static index"
        )
    return _decode_parts(read, raw, where, digest)


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
