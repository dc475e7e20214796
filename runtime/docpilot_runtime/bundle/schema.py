"""The bundle schema: every part as a frozen dataclass (``bundle.write`` encodes them,
``bundle.read`` decodes and checks them).

The bundle is one msgpack map next to the built site, the only thing the runtime reads;
static mode reads a JSON file derived from it (``write.encode_static``). This package is
the one owner of both: the build writes through ``encode_bundle``, every reader goes
through ``parse_bundle`` / ``load_bundle`` / ``decode_static``, and anything malformed is
a ``BundleError`` that names the file, the field (a dotted path such as
``units.text[3]``) and what was expected. Pure Python: msgpack is imported only where
bytes are packed or unpacked, so the browser core can decode the static index too.

Schema version 2 (documented for owners in example-site's Reference > Bundle schema):

``format`` "docpilot-bundle" · ``version`` 2 · ``generator`` "docpilot X.Y.Z" ·
``site`` {name, url} · ``embedder`` nil | {name, model, dims, center: bin float32 | nil} ·
``vectors`` nil | {layout, dims, count, bits: bin} · ``pages`` [{url, title, ids}] ·
``units`` {id: [..], url: [..], title: [..], breadcrumb: [[..]], text: [..], page: [..]}
(column-wise: one array per field, all of the same length) · ``lexical`` (see
``lexical``) · ``gate`` {method, lexical?, hybrid?} (see ``gate``) · ``tools`` [..] ·
``actions`` [..] (owner-declared maps, each with a ``name``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, NamedTuple

FORMAT = "docpilot-bundle"
VERSION = 2
# Which docpilot release writes each schema version, for the "rebuild" message.
WRITTEN_BY = {1: "docpilot 0.1.0", 2: "docpilot 0.1.0 and later"}
BUNDLE_DIR = "docpilot"
BUNDLE_NAME = "bundle.msgpack"
STATIC_FORMAT = "docpilot-static"
STATIC_NAME = "static.json"  # beside bundle.msgpack, in <site_dir>/docpilot/
UNIT_FIELDS = ("id", "url", "title", "breadcrumb", "text", "page")
LEXICAL_BLOCKS = ("terms", "offsets", "docs", "tfs", "lengths")



class BundleError(ValueError):
    """A bundle that cannot be used; the message names the file, the field and what
    was expected."""


def bundle_path(site_dir: str | os.PathLike[str]) -> Path:
    return Path(site_dir) / BUNDLE_DIR / BUNDLE_NAME


@dataclass(frozen=True)
class Anchor:
    """A signal's typical value on questions the corpus cannot and can answer."""

    uncovered: float
    covered: float


@dataclass(frozen=True)
class GateParams:
    """One mode's calibrated gate, as the bundle stores it."""

    weights: Mapping[str, float]
    anchors: Mapping[str, Anchor]
    threshold: float
    samples: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Signals:
    lexical_strength: float = 0.0
    lexical_margin: float = 0.0
    dense_strength: float | None = None
    dense_margin: float | None = None
    lexical_coverage: float = 0.0
    known_share: float = 0.0
    names_known: float = 1.0

    def get(self, name: str) -> float:
        value = getattr(self, name)
        return 0.0 if value is None else float(value)


SIGNALS = tuple(f.name for f in fields(Signals))



# --- The parts ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SiteInfo:
    name: str
    url: str = ""


@dataclass(frozen=True)
class EmbedderInfo:
    name: str
    model: str
    dims: int
    center: bytes | None = None  # float32 little-endian, dims values; None: no centring


@dataclass(frozen=True)
class Vectors:
    layout: str
    dims: int
    count: int
    bits: bytes  # count x dims / 8 bytes, see ``dense``


@dataclass(frozen=True)
class Page:
    url: str
    title: str
    ids: frozenset[str]
    id_order: tuple[str, ...] = field(default=(), compare=False, repr=False)


class UnitRecord(NamedTuple):
    """One searchable section. A named tuple rather than a frozen dataclass: 10k of
    them are built on every load, and a tuple is made ~10x faster (benchmarks/README)."""

    id: str
    url: str
    title: str
    breadcrumb: tuple[str, ...]
    text: str
    page: int


@dataclass(frozen=True)
class Bm25Params:
    k1: float
    b: float
    delta: float
    boosts: tuple[tuple[str, int], ...]  # (field, weight) in title, breadcrumb, text order


@dataclass(frozen=True)
class LexicalBlock:
    """The stored BM25+ index (layout in ``lexical``)."""

    variant: str
    params: Bm25Params
    count: int
    avg_length: float
    doc_dtype: str  # "u2" or "u4"
    doc_encoding: str
    terms: bytes
    offsets: bytes
    docs: bytes
    tfs: bytes
    lengths: bytes


@dataclass(frozen=True)
class Gate:
    """The calibrated gate of each retrieval mode (``None``: not calibrated)."""

    method: str = ""
    lexical: GateParams | None = None
    hybrid: GateParams | None = None


@dataclass(frozen=True)
class Bundle:
    """A loaded, checked bundle. ``path`` names the file in errors; ``hash`` is the
    sha256 of its bytes, which every result carries."""

    path: str
    hash: str
    version: int
    generator: str
    site: SiteInfo
    embedder: EmbedderInfo | None
    vectors: Vectors | None
    pages: tuple[Page, ...]
    units: tuple[UnitRecord, ...]
    lexical: LexicalBlock
    gate: Gate
    tools: tuple[Mapping[str, Any], ...] = ()
    actions: tuple[Mapping[str, Any], ...] = ()

    @property
    def site_name(self) -> str:
        return self.site.name or "this site"
