"""Stage 3's ranking: both channels over one bundle, fused, with the gate's raw signals.

Numpy-free and parameterised by its scorers: the server plugs in the numpy BM25+
scorer (``scoring.lexical_numpy``) and the dense scan (``scoring.dense.DenseChannel``,
see ``sites.loader``); the browser plugs in the pure-Python scorer (``retrieve.lexical``).
Both run the same code below, so server lexical mode and static mode give the same
result by construction (``tests/browser/test_static_assets.py`` checks it over the whole dev set).

Both channels run when there is a dense one: BM25+ over the units' text, title and
breadcrumb, and a Hamming scan of the 1-bit vectors rescored with the float query.
The ranked lists are fused by Reciprocal Rank Fusion; ``RetrievalParams.rerank`` says
how the fused pool is ordered. With no embedder, or one that fails, the dense list is
empty and the gate switches to its lexical threshold. Every tunable is in ``params``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from docpilot_runtime.bundle.schema import Signals, unit_column
from docpilot_runtime.retrieve.gate import margin
from docpilot_runtime.retrieve.lexical import (
    Weights,
    ceiling_floor,
    idf,
    query_tf_weight,
    release_pages,
    term_ceiling,
)
from docpilot_runtime.retrieve.names import names_known
from docpilot_runtime.retrieve.params import DEFAULT_PARAMS, RetrievalParams
from docpilot_runtime.retrieve.tokenize import (
    query_terms,
    search_term_counts,
    search_terms,
    tokenize,
)
from docpilot_runtime.shared.types import Retriever

Mode = Retriever  # the channels a ranking ran: its results' `retriever`
Hits = list[tuple[int, float]]


class LexicalScorer(Protocol):
    """A BM25+ scorer over the bundle's lexical block (``lexical`` or ``lexical_numpy``)."""

    count: int
    vocabulary: dict[str, int]

    def document_frequency(self, term: str) -> int: ...

    def search(self, terms: Sequence[str], limit: int = 50, weights: Weights = None) -> Hits: ...


class DenseScorer(Protocol):
    """The dense channel. ``query`` is whatever ``embed`` returned: opaque to the core."""

    def embed(self, text: str) -> object | None: ...

    def search(self, query: object, candidates: int) -> Hits: ...

    def cosines(self, query: object, rows: Sequence[int]) -> list[float]: ...


@dataclass(frozen=True)
class Ranking:
    """One query's retrieval: the final order and the raw signals behind it."""

    order: list[int]
    mode: Mode
    signals: Signals
    lexical: Hits = field(default_factory=list)
    dense: Hits = field(default_factory=list)


def rrf(lists: Sequence[tuple[float, Sequence[int]]], k: int) -> Hits:
    """Reciprocal Rank Fusion of ranked lists given as (weight, ids best first)."""
    scores: dict[int, float] = {}
    for weight, ids in lists:
        for rank, unit in enumerate(ids, start=1):
            scores[unit] = scores.get(unit, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def lexical_signals(index: LexicalScorer, terms: Sequence[str], hits: Hits) -> tuple[float, float]:
    """(strength, margin) of a BM25+ list: the best score over the most the terms could
    score (never under ``ceiling_floor``), and best minus the mean of the next four,
    over best."""
    ceiling = max(
        sum(
            term_ceiling(idf(index.count, index.document_frequency(t)))
            for t in dict.fromkeys(terms)
        ),
        ceiling_floor(index.count),
    )
    if not hits or ceiling <= 0:
        return 0.0, 0.0
    scores = [s for _, s in hits]
    return min(scores[0] / ceiling, 1.0), margin(scores, 4) / scores[0]


class UnitText(Protocol):
    """What the searcher reads of a unit: a bundle's ``UnitRecord`` or an indexed unit."""

    @property
    def title(self) -> str: ...

    @property
    def breadcrumb(self) -> Sequence[str]: ...

    @property
    def text(self) -> str: ...

    @property
    def page(self) -> int: ...


def unit_terms(unit: UnitText) -> frozenset[str]:
    """Every index term of a unit: its title, breadcrumb and text, as the index reads them."""
    return frozenset(tokenize(f"{unit.title}\n{' '.join(unit.breadcrumb)}\n{unit.text}"))


def coverage_signals(
    index: LexicalScorer, terms: Sequence[str], best: frozenset[str]
) -> tuple[float, float]:
    """(coverage, known share) of a question's content terms, each weighted by its idf (a
    term the corpus never uses at the highest idf): the share the best unit holds, and
    the share the corpus holds at all. (0, 0) for a question with no content term.

    Both divide by at least what two terms in 5 % of the units weigh (as
    ``lexical.ceiling_floor`` does for strength): a question made only of common words
    ("and how much does that cost?") is fully "held" by many units, and must not look
    well covered for it."""
    weights = {}
    known = 0.0
    for term in dict.fromkeys(terms):
        df = index.document_frequency(term)
        weights[term] = idf(index.count, df)
        if df:
            known += weights[term]
    if not weights:
        return 0.0, 0.0
    total = max(sum(weights.values()), 2.0 * idf(index.count, max(1, round(0.05 * index.count))))
    held = sum(w for t, w in weights.items() if t in best)
    return held / total, known / total


class Searcher:
    """Runs the channels over one bundle's indexes; shared by the turn and the
    build-time gate calibration."""

    def __init__(
        self,
        lexical: LexicalScorer,
        dense: DenseScorer | None = None,
        params: RetrievalParams = DEFAULT_PARAMS,
        units: Sequence[UnitText] = (),
        release: frozenset[int] | None = None,
    ) -> None:
        """``units`` are the bundle's units, for the page-level rescoring of the lexical
        list and the gate's coverage signal (none: the list stays as BM25+ ranks it and
        coverage reads 0). ``release``: the release pages when already known (a sharded
        index stores them), else found from the units' titles."""
        self.lexical = lexical
        self.dense = dense
        self.params = params
        self.units = units
        self.unit_pages = unit_column(units, "page")
        if release is None:
            titles = unit_column(units, "title")
            crumbs = unit_column(units, "breadcrumb")
            release = release_pages(zip(titles, crumbs, self.unit_pages, strict=True))
        self.release = release

    def terms(self, text: str) -> dict[str, float]:
        """The question's search terms with their query-term-frequency weights, cut to
        its ``query_term_cap`` rarest ones (kept in the question's order, which the
        scorers add them in)."""
        counts = search_term_counts(text, self.params.search_compounds)
        k3 = self.params.query_tf_k3
        weights = {t: query_tf_weight(n, k3) for t, n in counts.items()}
        cap = self.params.query_term_cap
        if len(weights) <= cap:
            return weights
        df = self.lexical.document_frequency
        known = [t for t in weights if df(t) > 0]
        kept = set(sorted(known, key=lambda t: (df(t), t))[:cap])
        return {t: w for t, w in weights.items() if t in kept}

    def rescore(self, hits: Hits) -> Hits:
        """The lexical list with release pages scaled by ``release_prior`` and each unit
        supported by ``page_support`` x the best other unit of its page in the list."""
        if not self.unit_pages or not hits:
            return hits
        p, pages = self.params, self.unit_pages
        scaled = [(u, s * p.release_prior if pages[u] in self.release else s) for u, s in hits]
        # Per page, its two best units in the list: (unit, score) pairs, best first.
        top: dict[int, list[tuple[int, float]]] = {}
        for u, s in sorted(scaled, key=lambda item: (-item[1], item[0])):
            pair = top.setdefault(pages[u], [])
            if len(pair) < 2:
                pair.append((u, s))
        out = []
        for u, s in scaled:
            pair = top[pages[u]]
            other = pair[0][1] if pair[0][0] != u else (pair[1][1] if len(pair) > 1 else 0.0)
            out.append((u, s + p.page_support * other))
        return sorted(out, key=lambda item: (-item[1], item[0]))

    def coverage(self, text: str, order: Sequence[int]) -> tuple[float, float]:
        """``coverage_signals`` of the question's content terms (all of them, uncapped:
        an unseen term is what names a subject no unit covers) against the best unit."""
        best = unit_terms(self.units[order[0]]) if order and self.units else frozenset()
        return coverage_signals(self.lexical, search_terms(text), best)

    def search(self, text: str, query: object | None = None) -> Ranking:
        """``query`` is the dense channel's embedding of ``text`` (None: lexical only)."""
        p = self.params
        weights = self.terms(text)
        terms = list(weights)
        raw = self.lexical.search(terms, p.channel_depth, weights)
        lexical = self.rescore(raw)
        # The gate reads every token of the question, function words included: its
        # signals scored better that way on the dev sets (benchmarks/README.md), and
        # its anchors are calibrated on them at build time.
        gate_terms = query_terms(text)
        if gate_terms != terms or any(w != 1.0 for w in weights.values()):
            raw = self.lexical.search(gate_terms, p.channel_depth)
        lex_strength, lex_margin = lexical_signals(self.lexical, gate_terms, raw)
        if self.dense is None or query is None:
            order = [unit for unit, _ in lexical[: p.pool]]
            coverage, known = self.coverage(text, order)
            signals = Signals(
                lexical_strength=lex_strength,
                lexical_margin=lex_margin,
                lexical_coverage=coverage,
                known_share=known,
                names_known=names_known(self.lexical, text),
            )
            return Ranking(order=order, mode="lexical", signals=signals, lexical=lexical)
        dense = self.dense.search(query, p.dense_candidates)[: p.channel_depth]
        fused = rrf(
            [(p.lexical_weight, [u for u, _ in lexical]), (p.dense_weight, [u for u, _ in dense])],
            p.rrf_k,
        )[: p.pool]
        order = [u for u, _ in fused]
        if p.rerank == "dense" and order:
            cosines = self.dense.cosines(query, order)
            ranked = sorted(zip(order, cosines, strict=True), key=lambda pair: (-pair[1], pair[0]))
            order = [u for u, _ in ranked]
        dense_scores = [s for _, s in dense]
        coverage, known = self.coverage(text, order)
        signals = Signals(
            lexical_strength=lex_strength,
            lexical_margin=lex_margin,
            dense_strength=dense_scores[0] if dense_scores else 0.0,
            dense_margin=margin(dense_scores, 5),
            lexical_coverage=coverage,
            known_share=known,
            names_known=names_known(self.lexical, text),
        )
        return Ranking(order=order, mode="hybrid", signals=signals, lexical=lexical, dense=dense)


