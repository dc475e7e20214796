"""The sharded static index: a small manifest, term shards and unit fragments.

Static mode on a large site should not download the whole index for one question (a
10,000-unit site's ``static.json`` is megabytes). The build cuts the same bundle into:

* ``static/manifest.json`` (fetched fresh on every page load, small): the header
  fields, the pages (url, title), every unit's page and length, the release pages, the
  lexical parameters, and the names of every other file;
* term shards ``static/t/<hash>.bin``: the vocabulary split by `shard_of` (a hash of the
  term's first ``prefix`` letters with accents folded, so every corpus word a foreign
  word could be a cognate of is in that word's shard), each with its terms' postings;
* unit fragments ``static/u/<hash>.json``: the units' records, ``FRAGMENT_UNITS`` a
  file, and id blocks ``static/i/<hash>.json``: only their ids, ``ID_BLOCK_UNITS`` a
  file (a ranking names 30 units; their texts are not needed).

Every name but the manifest's is the sha256 of the file's bytes (content-addressed:
cacheable for ever, never stale). A reader fetches the manifest, then the shards of the
question's terms and the fragments of the units the answer shows
(``retrieve.sharded``), and gets exactly what the whole file gives (a test compares
them over every dev set). Equal bundles give equal files.

Shard layout (little-endian): ``DPS1``, then uint32 terms, terms' UTF-8 bytes and
postings; the terms (sorted, one per line); uint32 offsets x (terms + 1) into this
shard's postings; docs (uint16 or uint32 as the manifest's ``doc_dtype``, gap-encoded per
term as in the bundle); tfs uint8.
"""

from __future__ import annotations

import base64
import binascii
import json
import struct
import sys
import unicodedata
from array import array
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from docpilot_runtime.bundle.schema import (
    VERSION,
    Bundle,
    BundleError,
)
from docpilot_runtime.bundle.write import gate_map
from docpilot_runtime.shared.languages import DOCS_SAMPLE_UNITS, sections_language

SHARDS_DIR = "static"  # under <site_dir>/docpilot/
MANIFEST_NAME = "manifest.json"
SHARDS_FORMAT = "docpilot-static-shards"
SHARD_MAGIC = b"DPS1"
FRAGMENT_UNITS = 8
ID_BLOCK_UNITS = 512
# The shard key's length in letters: at most the retrieval params' ``cognate_prefix``.
KEY_LETTERS = 5
TARGET_SHARD_BYTES = 16_000  # postings per shard, on average, before compression


def fold(term: str) -> str:
    """``term`` without accents (as ``retrieve.followup.fold``, which cognates match on)."""
    if term.isascii():
        return term
    return "".join(c for c in unicodedata.normalize("NFKD", term) if not unicodedata.combining(c))


def shard_of(term: str, shards: int, letters: int = KEY_LETTERS) -> int:
    """Which shard holds ``term``: by its first ``letters`` letters, accents folded."""
    return binascii.crc32(fold(term)[:letters].encode("utf-8")) % shards


def _le(values: array[Any]) -> bytes:
    if sys.byteorder != "little":
        values = array(values.typecode, values)
        values.byteswap()
    return values.tobytes()


def from_le(typecode: str, data: bytes | memoryview) -> array[Any]:
    values = array(typecode)
    values.frombytes(data)
    if sys.byteorder != "little":
        values.byteswap()
    return values


def _name(data: bytes, suffix: str) -> str:
    import hashlib  # the build's: the browser's reduced standard library has no hashlib

    return hashlib.sha256(data).hexdigest()[:20] + suffix


def _json(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode()


@dataclass(frozen=True)
class ShardFiles:
    """Every file of the sharded index, by its path under ``static/``."""

    files: dict[str, bytes]

    @property
    def manifest(self) -> bytes:
        return self.files[MANIFEST_NAME]


def shard_count(postings_bytes: int) -> int:
    """Enough shards that one holds about TARGET_SHARD_BYTES of postings."""
    return max(1, min(4096, -(-postings_bytes // TARGET_SHARD_BYTES)))


def encode_shards(bundle: Bundle, release: frozenset[int]) -> ShardFiles:
    """The sharded static index of ``bundle`` (``release``: its release pages, as the
    searcher finds them, written so a reader need not read every unit's title)."""
    lex = bundle.lexical
    width = 2 if lex.doc_dtype == "u2" else 4
    typecode = "H" if width == 2 else "I"
    terms = lex.terms.decode("utf-8").split("\n") if lex.terms else []
    offsets = from_le("I", lex.offsets)
    docs = from_le(typecode, lex.docs)
    count = shard_count(len(lex.docs) + len(lex.tfs))
    groups: list[list[int]] = [[] for _ in range(count)]
    for i, term in enumerate(terms):
        groups[shard_of(term, count)].append(i)
    files: dict[str, bytes] = {}
    shard_names = []
    for members in groups:
        local_offsets = array("I", [0])
        local_docs = array(typecode)
        local_tfs = bytearray()
        for i in members:
            start, end = offsets[i], offsets[i + 1]
            local_docs.extend(docs[start:end])
            local_tfs += lex.tfs[start:end]
            local_offsets.append(len(local_docs))
        text = "\n".join(terms[i] for i in members).encode("utf-8")
        data = b"".join(
            [
                SHARD_MAGIC,
                struct.pack("<III", len(members), len(text), len(local_docs)),
                text,
                _le(local_offsets),
                _le(local_docs),
                bytes(local_tfs),
            ]
        )
        name = "t/" + _name(data, ".bin")
        files[name] = data
        shard_names.append(name)
    units = bundle.units
    fragment_names = []
    for start in range(0, len(units), FRAGMENT_UNITS):
        chunk = units[start : start + FRAGMENT_UNITS]
        data = _json(
            {
                "start": start,
                "id": [u.id for u in chunk],
                "url": [u.url for u in chunk],
                "title": [u.title for u in chunk],
                "breadcrumb": [list(u.breadcrumb) for u in chunk],
                "text": [u.text for u in chunk],
            }
        )
        name = "u/" + _name(data, ".json")
        files[name] = data
        fragment_names.append(name)
    id_names = []
    for start in range(0, len(units), ID_BLOCK_UNITS):
        chunk = units[start : start + ID_BLOCK_UNITS]
        data = _json({"start": start, "id": [u.id for u in chunk]})
        name = "i/" + _name(data, ".json")
        files[name] = data
        id_names.append(name)
    page_type = "H" if len(bundle.pages) < 65536 else "I"
    gate = gate_map(bundle.gate)
    gate.pop("hybrid", None)
    manifest = {
        "format": SHARDS_FORMAT,
        "version": VERSION,
        "bundle_hash": bundle.hash,
        "generator": bundle.generator,
        # The docs' language, so a turn need not fetch the first sections to read it
        # (optional: a manifest without it has them fetched).
        "site": {
            "name": bundle.site.name,
            "url": bundle.site.url,
            "docs_language": sections_language(
                (u.title, u.text) for u in bundle.units[:DOCS_SAMPLE_UNITS]
            ),
        },
        "pages": {"url": [p.url for p in bundle.pages], "title": [p.title for p in bundle.pages]},
        "units": {
            "count": len(units),
            "page_dtype": "u2" if page_type == "H" else "u4",
            "page": base64.b64encode(
                _le(array(page_type, (u.page for u in units)))
            ).decode("ascii"),
            "fragment_units": FRAGMENT_UNITS,
            "fragments": fragment_names,
            "id_block_units": ID_BLOCK_UNITS,
            "id_blocks": id_names,
        },
        "release": sorted(release),
        "lexical": {
            "variant": lex.variant,
            "params": {
                "k1": lex.params.k1,
                "b": lex.params.b,
                "delta": lex.params.delta,
                "boosts": dict(lex.params.boosts),
            },
            "count": lex.count,
            "avg_length": lex.avg_length,
            "doc_dtype": lex.doc_dtype,
            "doc_encoding": lex.doc_encoding,
            "terms": len(terms),
            "lengths": base64.b64encode(lex.lengths).decode("ascii"),
            "key_letters": KEY_LETTERS,
            "shards": shard_names,
        },
        "gate": gate,
        "tools": [dict(t) for t in bundle.tools],
        "actions": [dict(a) for a in bundle.actions],
    }
    files[MANIFEST_NAME] = _json(manifest)
    return ShardFiles(files)


@dataclass(frozen=True)
class Shard:
    """One decoded term shard: its terms (in order) and their postings."""

    terms: dict[str, int]  # term -> its row in this shard
    offsets: array[Any]
    docs: array[Any]
    tfs: bytes


def decode_shard(data: bytes, doc_dtype: str, where: str) -> Shard:
    """A term shard's bytes, checked; errors name the file."""
    head = 4 + 12
    if len(data) < head or data[:4] != SHARD_MAGIC:
        raise BundleError(f"{where}: not a DocPilot term shard (no {SHARD_MAGIC!r} header)")
    n_terms, n_text, n_postings = struct.unpack_from("<III", data, 4)
    width = 2 if doc_dtype == "u2" else 4
    expected = head + n_text + 4 * (n_terms + 1) + n_postings * (width + 1)
    if len(data) != expected:
        raise BundleError(
            f"{where}: holds {len(data)} bytes, expected {expected} for {n_terms} terms and "
            f"{n_postings} postings"
        )
    view = memoryview(data)
    at = head
    try:
        text = bytes(view[at : at + n_text]).decode("utf-8")
    except UnicodeDecodeError:
        raise BundleError(f"{where}: its terms are not UTF-8 text") from None
    at += n_text
    offsets = from_le("I", view[at : at + 4 * (n_terms + 1)])
    at += 4 * (n_terms + 1)
    docs = from_le("H" if width == 2 else "I", view[at : at + n_postings * width])
    at += n_postings * width
    names = text.split("\n") if n_terms else []
    if len(names) != n_terms or offsets[-1] != n_postings:
        raise BundleError(f"{where}: its term list or offsets do not match its header")
    return Shard({t: i for i, t in enumerate(names)}, offsets, docs, bytes(view[at:]))


def decode_manifest(text: str | bytes, where: str) -> dict[str, Any]:
    """The manifest's JSON, its header checked (the fields are read by its reader)."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise BundleError(
            f"{where}: not a sharded static index ({exc.__class__.__name__})"
        ) from None
    if not isinstance(data, dict) or data.get("format") != SHARDS_FORMAT:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise BundleError(f"{where}: field 'format' should be {SHARDS_FORMAT!r}, found {found!r}")
    if data.get("version") != VERSION:
        raise BundleError(
            f"{where}: schema version {data.get('version')!r}; this runtime reads version "
            f"{VERSION}: rebuild the site with the same DocPilot version as the runtime"
        )
    return data


def decode_fragment(text: str | bytes, where: str, fields: tuple[str, ...]) -> Mapping[str, Any]:
    """A unit fragment or id block: ``start`` and one list per field, of equal length."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise BundleError(f"{where}: not a unit fragment ({exc.__class__.__name__})") from None
    if not isinstance(data, dict) or not isinstance(data.get("start"), int):
        raise BundleError(f"{where}: field 'start' should be an integer")
    sizes = {name: len(data[name]) for name in fields if isinstance(data.get(name), list)}
    if len(sizes) != len(fields) or len(set(sizes.values())) != 1:
        raise BundleError(f"{where}: fields {', '.join(fields)} should be lists of equal length")
    return data
