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
from collections.abc import Iterator, Mapping, Sequence, Set
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, NamedTuple, overload

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


class IdSet(Set[str]):
    """A page's heading ids as a set, made on first use: a load builds thousands of pages
    and only the link check asks (``check.links``), for the few pages an answer links to."""

    __slots__ = ("_order", "_set")

    def __init__(self, order: Sequence[str]) -> None:
        self._order = order
        self._set: frozenset[str] | None = None

    def _ids(self) -> frozenset[str]:
        if self._set is None:
            self._set = frozenset(self._order)
        return self._set

    def __contains__(self, value: object) -> bool:
        return value in self._ids()

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids())

    def __len__(self) -> int:
        return len(self._ids())

    def __hash__(self) -> int:
        return hash(self._ids())

    def __repr__(self) -> str:
        return f"IdSet({sorted(self._ids())!r})"


@dataclass(frozen=True)
class Page:
    url: str
    title: str
    ids: Set[str]
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


class UnitColumns(Sequence[UnitRecord]):
    """The bundle's units as it stores them, one list per field: a load keeps the decoded
    columns as they are and makes a `UnitRecord` only for a unit that is read (a turn reads
    a few dozen of 10,000). ``breadcrumb`` entries are lists, given out as tuples."""

    __slots__ = ("breadcrumb", "id", "page", "text", "title", "url")

    def __init__(
        self,
        id: Sequence[str],
        url: Sequence[str],
        title: Sequence[str],
        breadcrumb: Sequence[Sequence[str]],
        text: Sequence[str],
        page: Sequence[int],
    ) -> None:
        self.id, self.url, self.title = id, url, title
        self.breadcrumb, self.text, self.page = breadcrumb, text, page

    @classmethod
    def of(cls, units: Sequence[UnitRecord]) -> UnitColumns:
        """Columns from records (a built index's units)."""
        if isinstance(units, UnitColumns):
            return units
        return cls(
            [u.id for u in units],
            [u.url for u in units],
            [u.title for u in units],
            [u.breadcrumb for u in units],
            [u.text for u in units],
            [u.page for u in units],
        )

    def __len__(self) -> int:
        return len(self.id)

    @overload
    def __getitem__(self, index: int) -> UnitRecord: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[UnitRecord, ...]: ...

    def __getitem__(self, index: int | slice) -> UnitRecord | tuple[UnitRecord, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        return UnitRecord(
            self.id[index],
            self.url[index],
            self.title[index],
            tuple(self.breadcrumb[index]),
            self.text[index],
            self.page[index],
        )

    def __iter__(self) -> Iterator[UnitRecord]:
        return map(
            UnitRecord,
            self.id, self.url, self.title, map(tuple, self.breadcrumb), self.text, self.page
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or len(other) != len(self):
            return False
        return all(a == b for a, b in zip(self, other, strict=False))

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"UnitColumns({len(self)} units)"


def unit_column(units: Sequence[Any], name: str) -> Sequence[Any]:
    """One field of every unit: the stored column itself when ``units`` keeps columns."""
    if isinstance(units, UnitColumns):
        column: Sequence[Any] = getattr(units, name)
        return column
    return [getattr(u, name) for u in units]


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
    units: Sequence[UnitRecord]  # `UnitColumns` when read from a file
    lexical: LexicalBlock
    gate: Gate
    tools: tuple[Mapping[str, Any], ...] = ()
    actions: tuple[Mapping[str, Any], ...] = ()

    @property
    def site_name(self) -> str:
        return self.site.name or "this site"
