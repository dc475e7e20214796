"""Static mode over the sharded index: only the files a question needs, the same answer.

`ShardedSite` is a `Site` whose scorer and units are filled file by file
(``bundle.shards`` says what the files hold). A turn runs as on the whole index; when it
reaches what is not loaded yet it says which files it needs (`Need`), and its host
fetches them and runs the turn again, until nothing is missing. Two kinds of miss:

* a term's shard: `Need` at once (the scores would be wrong without it). `prefetch`
  names the shards of every term a turn can read before it starts (the question's and
  the earlier questions' terms: a composed follow-up is made of those, and a cognate
  lives in its word's shard), so a turn usually needs one round for them;
* a unit's record or id: noted, and an empty value stands in until the turn ends, then
  every unit file noted is asked for at once (`ShardedSite.missing`). The turn's result
  is kept only from a run with no miss, so it is exactly the whole index's.

Pure Python, standard library only (it runs in the browser under Pyodide).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, overload

from docpilot_runtime.bundle.read import gate_from_static
from docpilot_runtime.bundle.schema import (
    Bm25Params,
    Bundle,
    Gate,
    IdSet,
    LexicalBlock,
    Page,
    SiteInfo,
    UnitColumns,
)
from docpilot_runtime.bundle.shards import (
    Shard,
    decode_fragment,
    decode_manifest,
    decode_shard,
    from_le,
    shard_of,
)
from docpilot_runtime.retrieve.followup import Cognates
from docpilot_runtime.retrieve.lexical import LexicalIndex
from docpilot_runtime.retrieve.search import Searcher
from docpilot_runtime.retrieve.site import Site, anchor_questions
from docpilot_runtime.retrieve.tokenize import query_terms, search_term_counts
from docpilot_runtime.shared.languages import DOCS_SAMPLE_UNITS
from docpilot_runtime.shared.types import AskRequest

RECORD_FIELDS = ("id", "url", "title", "breadcrumb", "text")
_EMPTY: dict[str, Any] = {"id": "", "url": "", "title": "", "breadcrumb": (), "text": ""}


class Need(Exception):
    """The files (paths under ``static/``) a turn needs before it can finish."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = tuple(sorted(set(names)))
        super().__init__(f"needs {len(self.names)} more files")


class ShardedLexical(LexicalIndex):
    """The BM25+ scorer over term shards: the same arithmetic as `LexicalIndex` (it is
    one), with each term's postings looked up in its shard."""

    def __init__(self, manifest: dict[str, Any], where: str) -> None:
        raw = manifest["lexical"]
        params = raw["params"]
        self.k1, self.b = float(params["k1"]), float(params["b"])
        self.delta = float(params["delta"])
        self.count = int(raw["count"])
        self.avg_length = float(raw["avg_length"]) or 1.0
        self.doc_dtype = str(raw["doc_dtype"])
        self.letters = int(raw["key_letters"])
        self.shard_names: list[str] = list(raw["shards"])
        self.lengths = from_le("I", base64.b64decode(raw["lengths"]))
        if len(self.lengths) != self.count:
            raise ValueError(f"{where}: 'lexical.lengths' holds {len(self.lengths)} units, "
                             f"expected {self.count}")
        self.norms = self.length_norms(self.lengths)
        self.shards: dict[int, Shard] = {}
        self.vocabulary: dict[str, int] = {}  # the terms of the shards loaded so far
        self.where = where

    def shard_name(self, term: str) -> str:
        return self.shard_names[shard_of(term, len(self.shard_names), self.letters)]

    def add(self, name: str, data: bytes) -> None:
        index = self.shard_names.index(name)
        if index in self.shards:
            return
        shard = decode_shard(data, self.doc_dtype, f"{self.where}: {name}")
        self.shards[index] = shard
        for term in shard.terms:
            self.vocabulary[term] = len(self.vocabulary)

    def _shard(self, term: str) -> Shard:
        index = shard_of(term, len(self.shard_names), self.letters)
        shard = self.shards.get(index)
        if shard is None:
            raise Need([self.shard_names[index]])
        return shard

    def missing(self, terms: Iterable[str]) -> set[str]:
        """The shards of ``terms`` not loaded yet."""
        count = len(self.shard_names)
        wanted = {shard_of(t, count, self.letters) for t in terms}
        return {self.shard_names[i] for i in wanted if i not in self.shards}

    def postings(self, term: str) -> tuple[Sequence[int], Sequence[int], int, int] | None:
        shard = self._shard(term)
        row = shard.terms.get(term)
        if row is None:
            return None
        return shard.docs, shard.tfs, shard.offsets[row], shard.offsets[row + 1]

    def document_frequency(self, term: str) -> int:
        shard = self._shard(term)
        row = shard.terms.get(term)
        return 0 if row is None else shard.offsets[row + 1] - shard.offsets[row]

    def search(self, terms: Sequence[str], limit: int = 50, weights: Any = None) -> Any:
        missing = self.missing(terms)
        if missing:
            raise Need(missing)
        return super().search(terms, limit, weights)


class UnitFiles:
    """The unit fragments and id blocks loaded so far, and the ones a turn read without
    having them (``wanted``)."""

    def __init__(self, manifest: dict[str, Any]) -> None:
        units = manifest["units"]
        self.count = int(units["count"])
        self.fragment_units = int(units["fragment_units"])
        self.id_block_units = int(units["id_block_units"])
        self.fragment_names: list[str] = list(units["fragments"])
        self.id_names: list[str] = list(units["id_blocks"])
        self.fragments: dict[int, Any] = {}
        self.id_blocks: dict[int, list[str]] = {}
        self.wanted: set[str] = set()

    def add(self, name: str, data: bytes, where: str) -> None:
        if name in self.id_names:
            block = decode_fragment(data, f"{where}: {name}", ("id",))
            self.id_blocks[self.id_names.index(name)] = block["id"]
        else:
            fragment = decode_fragment(data, f"{where}: {name}", RECORD_FIELDS)
            self.fragments[self.fragment_names.index(name)] = fragment

    def value(self, field: str, row: int) -> Any:
        fragment = self.fragments.get(row // self.fragment_units)
        if fragment is not None:
            return fragment[field][row % self.fragment_units]
        if field == "id":
            block = self.id_blocks.get(row // self.id_block_units)
            if block is not None:
                return block[row % self.id_block_units]
            self.wanted.add(self.id_names[row // self.id_block_units])
            return ""
        self.wanted.add(self.fragment_names[row // self.fragment_units])
        return _EMPTY[field]


class _Column(Sequence[Any]):
    """One unit field, read from the unit files (a stand-in value while one is missing)."""

    def __init__(self, files: UnitFiles, field: str) -> None:
        self.files = files
        self.field = field

    def __len__(self) -> int:
        return self.files.count

    @overload
    def __getitem__(self, index: int) -> Any: ...

    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < self.files.count:
            raise IndexError(index)
        return self.files.value(self.field, index)


@dataclass
class ShardedSite(Site):
    """A `Site` over the sharded static index (``Site.from_manifest`` below)."""

    files: UnitFiles | None = None
    _cognates_terms: int = -1

    @property
    def lexical(self) -> ShardedLexical:
        lexical = self.searcher.lexical
        assert isinstance(lexical, ShardedLexical)
        return lexical

    @property
    def docs_language(self) -> str:
        """The manifest's (``sharded_site``); from a manifest without it, as
        `Site.docs_language`, read only once the sections it reads are loaded: a run that
        finds them missing notes them and says nothing (its result is dropped, and the turn
        runs again with them), so stand-ins are never what the language is read from."""
        files = self.files
        assert files is not None
        if self._docs_language is None and not self.language:
            rows = range(min(DOCS_SAMPLE_UNITS, files.count))
            if any(row // files.fragment_units not in files.fragments for row in rows):
                for row in rows:
                    files.value("text", row)  # noted as wanted
                return ""
        return super().docs_language

    @property
    def cognates(self) -> Cognates:
        """Rebuilt when shards were added: a cognate is looked for only in its word's shard,
        which the turn has loaded by then."""
        if self._cognates is None or self._cognates_terms != len(self.lexical.vocabulary):
            self._cognates = Cognates(self.lexical, self.params.cognate_prefix)
            self._cognates_terms = len(self.lexical.vocabulary)
        return self._cognates

    def add(self, name: str, data: bytes) -> None:
        """One fetched file (its path under ``static/``, as `Need` named it)."""
        if name.startswith("t/"):
            self.lexical.add(name, data)
        else:
            assert self.files is not None
            self.files.add(name, data, self.bundle.path)

    def prefetch(self, request: AskRequest) -> set[str]:
        """The shards of every term this turn can read (the question's and those of the
        earlier questions a follow-up may be composed with) that are not loaded yet."""
        texts = [request.question, *anchor_questions(request.history)]
        terms: set[str] = set()
        compounds = self.params.search_compounds
        for text in texts:
            terms.update(query_terms(text))
            terms.update(search_term_counts(text, compounds))
        return self.lexical.missing(terms)

    def run(self, request: AskRequest, turn: Callable[[], Any]) -> Any:
        """``turn()`` when nothing it reads is missing; else `Need` names every file to
        fetch next (the term shards first, then the unit files)."""
        missing = self.prefetch(request)
        if missing:
            raise Need(missing)
        assert self.files is not None
        self.files.wanted.clear()
        result = turn()
        if self.files.wanted:
            raise Need(self.files.wanted)
        return result


def sharded_site(manifest_text: str | bytes, prefix: str = "/", where: str = "") -> ShardedSite:
    """The site a sharded static index describes; its files are added as turns need them."""
    manifest = decode_manifest(manifest_text, where)
    pages_raw = manifest["pages"]
    pages = tuple(
        Page(url, title, IdSet(()), ())
        for url, title in zip(pages_raw["url"], pages_raw["title"], strict=True)
    )
    units_raw = manifest["units"]
    typecode = "H" if units_raw["page_dtype"] == "u2" else "I"
    page_column = from_le(typecode, base64.b64decode(units_raw["page"]))
    files = UnitFiles(manifest)
    column = {name: _Column(files, name) for name in RECORD_FIELDS}
    units = UnitColumns(**column, page=page_column)
    lexical = ShardedLexical(manifest, where)
    raw_lex = manifest["lexical"]
    params = raw_lex["params"]
    block = LexicalBlock(
        variant=raw_lex["variant"],
        params=Bm25Params(
            k1=lexical.k1,
            b=lexical.b,
            delta=lexical.delta,
            boosts=tuple((k, int(params["boosts"][k])) for k in ("title", "breadcrumb", "text")),
        ),
        count=lexical.count,
        avg_length=float(raw_lex["avg_length"]),
        doc_dtype=lexical.doc_dtype,
        doc_encoding=raw_lex["doc_encoding"],
        terms=b"",
        offsets=b"",
        docs=b"",
        tfs=b"",
        lengths=base64.b64decode(raw_lex["lengths"]),
    )
    site_raw = manifest["site"]
    bundle = Bundle(
        path=where,
        hash=str(manifest["bundle_hash"]),
        version=int(manifest["version"]),
        generator=str(manifest.get("generator") or ""),
        site=SiteInfo(name=str(site_raw["name"]), url=str(site_raw.get("url") or "")),
        embedder=None,
        vectors=None,
        pages=pages,
        units=units,
        lexical=block,
        gate=gate_from_static(manifest, where) if manifest.get("gate") else Gate(),
        tools=tuple(manifest.get("tools") or ()),
        actions=tuple(manifest.get("actions") or ()),
    )
    release = frozenset(int(p) for p in manifest["release"])
    searcher = Searcher(lexical, units=units, release=release)
    site = ShardedSite(prefix=prefix, bundle=bundle, searcher=searcher, files=files)
    if isinstance(site_raw.get("docs_language"), str):
        site._docs_language = site_raw["docs_language"]
    return site
