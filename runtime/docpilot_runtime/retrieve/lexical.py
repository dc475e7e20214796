"""The BM25+ index: built once, stored as binary blocks, scored in pure Python.

Pure Python (``array`` and ``math`` only) because this is the reference scorer that
also runs in the browser under Pyodide; ``scoring.lexical_numpy`` scores the same blocks
faster on the server and a test holds the two to the same ranking.

Variant: BM25+ (Lv & Zhai 2011) over one weighted field, the way MiniSearch scores
it, with MiniSearch's defaults:

* ``k1 = 1.2`` term-frequency saturation,
* ``b = 0.7`` length normalisation,
* ``delta = 0.5`` the "+" lower bound, so a match in a long section still counts,
* idf = ln(1 + (N - df + 0.5) / (df + 0.5)).

A unit's term frequency is ``3 x tf(title) + 1 x tf(breadcrumb) + tf(text)`` and its
length is weighted the same way: a section whose heading names the term is worth
more than one that mentions it in passing.

Stored blocks (little-endian, so a load is a view, not a parse):
``terms`` the sorted vocabulary, UTF-8, one per line; ``offsets`` uint32 x (T + 1);
``docs`` unit indexes, gap-encoded within each term's list (the first is absolute):
small numbers that gzip well; uint16 when there are fewer than 65,536 units, else uint32;
``tfs`` weighted term frequency, uint8 (saturated at 255); ``lengths`` uint32 per unit.
"""

from __future__ import annotations

import math
import operator
import re
import sys
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any

from docpilot_runtime.bundle.schema import Bm25Params, LexicalBlock
from docpilot_runtime.retrieve.tokenize import tokenize

K1 = 1.2
B = 0.7
DELTA = 0.5
TITLE_BOOST = 3
BREADCRUMB_BOOST = 1
TEXT_BOOST = 1
_TF_MAX = 255

# A query term's weight, as a factor of its idf (``query_tf_weight``); None: all 1.
Weights = Mapping[str, float] | None
Hits = list[tuple[int, float]]


@dataclass(frozen=True)
class LexicalDoc:
    """What the lexical index sees of one unit."""

    title: str
    breadcrumb: str
    text: str


def _le(arr: array[Any]) -> bytes:
    if sys.byteorder != "little":
        arr = array(arr.typecode, arr)
        arr.byteswap()
    return arr.tobytes()


def _from_le(typecode: str, data: bytes) -> array[Any]:
    arr = array(typecode)
    arr.frombytes(data)
    if sys.byteorder != "little":
        arr.byteswap()
    return arr


def _doc_typecode(count: int) -> tuple[str, str]:
    return ("H", "u2") if count < 65536 else ("I", "u4")


BOOSTS = (("title", TITLE_BOOST), ("breadcrumb", BREADCRUMB_BOOST), ("text", TEXT_BOOST))


def build_lexical(
    docs: Sequence[LexicalDoc],
    boosts: tuple[tuple[str, int], ...] = BOOSTS,
    tokens: Callable[[str], Sequence[str]] = tokenize,
) -> LexicalBlock:
    """The bundle's ``lexical`` block for these units, deterministic for the same input.
    ``boosts``: each field's weight, in the order title, breadcrumb, text (the benchmarks
    try others; the bundle records the ones used). ``tokens``: what tokenizes a field; it
    must give ``tokenize``'s tokens (the build passes a cache of them, ``index/tokens``)."""
    # Per term, the units that hold it and its weighted frequency in each, in unit order.
    postings: dict[str, tuple[list[int], list[int]]] = {}
    lengths = array("I")
    weights = dict(boosts)
    fields = [weights["title"], weights["breadcrumb"], weights["text"]]
    for index, doc in enumerate(docs):
        counts: dict[str, int] = {}
        length = 0
        for field, boost in zip((doc.title, doc.breadcrumb, doc.text), fields, strict=True):
            found = tokens(field)
            length += boost * len(found)
            for token, n in Counter(found).items():
                counts[token] = counts.get(token, 0) + boost * n
        lengths.append(length)
        for token, tf in counts.items():
            entry = postings.get(token)
            if entry is None:
                postings[token] = entry = ([], [])
            entry[0].append(index)
            entry[1].append(tf if tf < _TF_MAX else _TF_MAX)
    terms = sorted(postings)
    typecode, dtype = _doc_typecode(len(docs))
    offsets = array("I", [0])
    doc_ids = array(typecode)
    tfs = array("B")
    for term in terms:
        units, frequencies = postings[term]
        doc_ids.append(units[0])
        doc_ids.extend(map(operator.sub, islice(units, 1, None), units))  # gaps
        tfs.extend(frequencies)
        offsets.append(len(doc_ids))
    total = sum(lengths)
    return LexicalBlock(
        variant="bm25+",
        params=Bm25Params(
            k1=K1,
            b=B,
            delta=DELTA,
            boosts=tuple(boosts),
        ),
        count=len(docs),
        avg_length=(total / len(docs)) if docs else 0.0,
        doc_dtype=dtype,
        doc_encoding="gaps",
        terms="\n".join(terms).encode("utf-8"),
        offsets=_le(offsets),
        docs=_le(doc_ids),
        tfs=tfs.tobytes(),
        lengths=_le(lengths),
    )


def idf(count: int, df: int) -> float:
    return math.log(1.0 + (count - df + 0.5) / (df + 0.5))


def query_tf_weight(count: int, k3: float) -> float:
    """What a query term that the question uses ``count`` times weighs, as a factor of
    its idf: Robertson's saturating query-term frequency, ``(k3 + 1) q / (k3 + q)``.
    Exactly 1 for a term used once; at most ``k3 + 1``."""
    return (k3 + 1.0) * count / (k3 + count)


def term_ceiling(term_idf: float) -> float:
    """The most one query term can add to a unit's score (tf -> infinity)."""
    return term_idf * (K1 + 1.0 + DELTA)


def ceiling_floor(count: int) -> float:
    """The least "most a question could score" the gate divides by: what two terms that
    each occur in 5 % of the units could add. A question made only of common words
    ("and what about that one?") has a tiny ceiling of its own, which its best unit
    would nearly fill; the floor keeps such a question from looking well covered."""
    return 2.0 * term_ceiling(idf(count, max(1, round(0.05 * count))))


# A heading or breadcrumb that names a release: "0.37.2 (March 5, 2024)", "v1.2",
# "2024-03-05", "Version 2".
_RELEASE = re.compile(r"^\s*v?\d+\.\d+(?:\.\d+)?\b|\b\d{4}-\d{2}-\d{2}\b|^\s*version\b", re.I)
_RELEASE_MIN_UNITS = 3


def release_pages(units: Iterable[tuple[str, Sequence[str], int]]) -> frozenset[int]:
    """Pages whose sections are mostly releases (release notes, changelogs), read from
    the structure alone: at least half of a page's units (and three or more) carry a
    version or a date in their title or breadcrumb below the page's own title.

    ``units`` are (title, breadcrumb, page) triples in unit order. Such a page mentions
    every feature once and so matches every question a little; ``RetrievalParams
    .release_prior`` scales its units down in the lexical list."""
    flags: dict[int, list[bool]] = {}
    for title, breadcrumb, page in units:
        named = any(_RELEASE.search(x) for x in (title, *breadcrumb[1:]))
        flags.setdefault(page, []).append(named)
    return frozenset(
        page
        for page, marks in flags.items()
        if len(marks) >= _RELEASE_MIN_UNITS and 2 * sum(marks) >= len(marks)
    )


class StoredIndex:
    """What every reader of the stored blocks needs: parameters, size, vocabulary.
    Subclasses decode the posting blocks their own way into ``offsets``."""

    offsets: Any  # array("I") in pure Python, an int64 ndarray on the server

    def __init__(self, block: LexicalBlock) -> None:
        self.k1 = block.params.k1
        self.b = block.params.b
        self.delta = block.params.delta
        self.count = block.count
        self.avg_length = block.avg_length or 1.0
        raw_terms = block.terms
        terms = raw_terms.decode("utf-8").split("\n") if raw_terms else []
        self.vocabulary = {term: i for i, term in enumerate(terms)}

    def document_frequency(self, term: str) -> int:
        i = self.vocabulary.get(term)
        return 0 if i is None else int(self.offsets[i + 1] - self.offsets[i])


class LexicalIndex(StoredIndex):
    """The stored index, decoded once; scoring allocates only the score map."""

    def __init__(self, block: LexicalBlock) -> None:
        super().__init__(block)
        typecode = "H" if block.doc_dtype == "u2" else "I"
        self.offsets = _from_le("I", block.offsets)
        self.docs = _from_le(typecode, block.docs)
        self.tfs = _from_le("B", block.tfs)
        self.lengths = _from_le("I", block.lengths)
        self.norms = self.length_norms(self.lengths)

    def length_norms(self, lengths: Iterable[int]) -> list[float]:
        """Each unit's ``k1 * (1 - b + b * length / avg)``, the denominator's length part."""
        k1, b, avg = self.k1, self.b, self.avg_length
        return [k1 * (1.0 - b + b * length / avg) for length in lengths]

    def postings(self, term: str) -> tuple[Sequence[int], Sequence[int], int, int] | None:
        """(docs, tfs, start, end): where ``term``'s postings are, or None when no unit
        holds it (a sharded index finds them in the term's shard)."""
        i = self.vocabulary.get(term)
        if i is None:
            return None
        return self.docs, self.tfs, self.offsets[i], self.offsets[i + 1]

    def term_idf(self, term: str) -> float:
        return idf(self.count, self.document_frequency(term))

    def scores(self, terms: Iterable[str], weights: Weights = None) -> dict[int, float]:
        """BM25+ score of every unit that contains at least one of ``terms``; a term's
        idf is multiplied by its entry in ``weights`` (1 when absent)."""
        out: dict[int, float] = {}
        k1p1, delta, norms = self.k1 + 1.0, self.delta, self.norms
        for term in dict.fromkeys(terms):
            found = self.postings(term)
            if found is None:
                continue
            docs, tfs, start, end = found
            weight = idf(self.count, end - start)
            if weights is not None and term in weights:
                weight *= weights[term]
            d = 0
            for j in range(start, end):
                d += docs[j]
                tf = tfs[j]
                out[d] = out.get(d, 0.0) + weight * ((tf * k1p1) / (tf + norms[d]) + delta)
        return out

    def search(self, terms: Sequence[str], limit: int = 50, weights: Weights = None) -> Hits:
        """Top units as (unit index, score), best first; ties go to the earlier unit."""
        ranked = sorted(self.scores(terms, weights).items(), key=lambda item: (-item[1], item[0]))
        return ranked[:limit]
