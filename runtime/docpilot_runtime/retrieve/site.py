"""The turn core, stages 1-3 and the model-free results: one `Site` for the server and
the browser's static mode.

Numpy-free and parameterised by its scorers: the server plugs in the numpy BM25+
scorer (``lexical_numpy``) and the dense scan (``dense.DenseChannel``, see
``site_loader``); the browser plugs in the pure-Python scorer (``lexical``). Both run
the same code below, so server lexical mode and static mode give the same result by
construction (``tests/test_static_assets.py`` checks it over the whole dev set).

Both channels run when there is a dense one: BM25+ over the units' text, title and
breadcrumb, and a Hamming scan of the 1-bit vectors rescored with the float query.
The ranked lists are fused by Reciprocal Rank Fusion; ``RetrievalParams.rerank`` says
how the fused pool is ordered. With no embedder, or one that fails, the dense list is
empty and the gate switches to its lexical threshold. Every tunable is in ``params``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from docpilot_runtime.bundle.schema import Bundle, UnitRecord
from docpilot_runtime.reply.passages import page_title_of, passages_blocks, preview
from docpilot_runtime.reply.refusal import refusal_blocks
from docpilot_runtime.retrieve.followup import Cognates, rescue_question
from docpilot_runtime.retrieve.gate import (
    GateParams,
    Signals,
    confidence,
    default_params,
    gate_score,
    margin,
)
from docpilot_runtime.retrieve.lexical import (
    Weights,
    ceiling_floor,
    idf,
    query_tf_weight,
    release_pages,
    term_ceiling,
)
from docpilot_runtime.retrieve.params import DEFAULT_PARAMS, RetrievalParams
from docpilot_runtime.retrieve.tokenize import (
    query_terms,
    search_term_counts,
    search_terms,
    tokenize,
)
from docpilot_runtime.screen.credentials import credential_reply, screen_request
from docpilot_runtime.screen.social import match_social
from docpilot_runtime.shared.framing import ENGLISH, Framing, framing_for
from docpilot_runtime.shared.markdown_tree import to_markdown
from docpilot_runtime.shared.paths import page_key
from docpilot_runtime.shared.types import (
    COMPLETED_KINDS,
    AskRequest,
    Citation,
    HistoryItem,
    PageRef,
    Result,
)

Mode = Literal["hybrid", "lexical"]
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
    ) -> None:
        """``units`` are the bundle's units, for the page-level rescoring of the lexical
        list and the gate's coverage signal (none: the list stays as BM25+ ranks it and
        coverage reads 0)."""
        self.lexical = lexical
        self.dense = dense
        self.params = params
        self.units = units
        self.unit_pages = [u.page for u in units]
        self.release = release_pages([(u.title, u.breadcrumb, u.page) for u in units])

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
        )
        return Ranking(order=order, mode="hybrid", signals=signals, lexical=lexical, dense=dense)


def anchor_questions(history: Sequence[HistoryItem]) -> list[str]:
    """The earlier questions a follow-up is composed with: the last *answered* one (and
    the one before it when that turn was itself rescued); refused turns never anchor it."""
    answered = [h for h in history if h.kind in COMPLETED_KINDS]
    if not answered:
        return []
    last = answered[-1]
    parts = [last.question]
    if last.rescued and len(answered) > 1:
        parts.insert(0, answered[-2].question)
    return parts


@dataclass(frozen=True)
class Retrieval:
    """The gate's verdict on a turn, with what the rest of the turn needs.

    ``ranking.order`` is what retrieval found on its own merit: it makes ``ranked``,
    the closest pages and the excerpts a ``passages`` answer shows. ``page_first`` are
    the reader's current page's closest units, which join only the *model's* input
    first (seed 003): they never count toward confidence or the gate."""

    site: Site
    ranking: Ranking
    passed: bool
    score: float
    confidence: int
    rescued: bool
    page_first: list[int]

    @property
    def retriever(self) -> Mode:
        return self.ranking.mode

    @property
    def params(self) -> RetrievalParams:
        return self.site.params

    def model_order(self) -> list[int]:
        """The model's input order: the reader's page first, then the ranking."""
        first = self.page_first
        return [*first, *(u for u in self.ranking.order if u not in first)]

    def ranked_ids(self) -> list[str]:
        """Unit ids best first, topped up from the lexical list to at least min_ranked."""
        order = list(self.ranking.order)
        seen = set(order)
        for unit, _ in self.ranking.lexical:
            if len(order) >= self.params.min_ranked:
                break
            if unit not in seen:
                order.append(unit)
                seen.add(unit)
        units = self.site.bundle.units
        return [units[u].id for u in order]

    def shown_units(self) -> list[UnitRecord]:
        """The excerpts a ``passages`` answer quotes: the best on their own merit."""
        units = self.site.bundle.units
        return [units[u] for u in self.ranking.order[: self.params.answer_units]]

    def closest_pages(self) -> list[PageRef]:
        """The distinct pages of the best units, up to closest_pages."""
        bundle = self.site.bundle
        found: list[PageRef] = []
        seen: set[int] = set()
        for unit in self.ranking.order:
            index = bundle.units[unit].page
            if index not in seen:
                seen.add(index)
                found.append(PageRef(url=bundle.pages[index].url, title=bundle.pages[index].title))
            if len(found) >= self.params.closest_pages:
                break
        return found

    def progress(self, framing: Framing = ENGLISH) -> str:
        if not self.passed:
            return framing.not_covered
        return framing.found_results(len(self.shown_units()))

    def common(self, base: Mapping[str, Any]) -> dict[str, Any]:
        """The result fields every kind after stage 3 carries."""
        return {
            **base,
            "confidence": self.confidence,
            "retriever": self.retriever,
            "rescued": self.rescued,
            "ranked": self.ranked_ids(),
        }


@dataclass
class Site:
    """One bundle, loaded once, with its scorers: the turn core for every host."""

    prefix: str
    bundle: Bundle
    searcher: Searcher
    embedder_error: str | None = None
    language: str = ""  # from the manifest, "" when unknown
    version: str = ""  # the docs version (a manifest or mike's versions.json), "" for none
    page_units: dict[str, list[int]] = field(init=False, repr=False)
    unit_rows: dict[str, int] = field(init=False, repr=False)  # unit id -> row
    _cognates: Cognates | None = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        if not self.prefix.endswith("/"):
            self.prefix += "/"
        self.page_units = {}
        for i, unit in enumerate(self.bundle.units):
            key = page_key(self.bundle.pages[unit.page].url)
            self.page_units.setdefault(key, []).append(i)
        self.unit_rows = {u.id: i for i, u in enumerate(self.bundle.units)}

    @property
    def name(self) -> str:
        return self.bundle.site_name

    @property
    def params(self) -> RetrievalParams:
        return self.searcher.params

    @property
    def mode(self) -> Mode:
        return "hybrid" if self.searcher.dense is not None else "lexical"

    def describe(self) -> dict[str, Any]:
        embedder = self.bundle.embedder
        return {
            "prefix": self.prefix,
            "language": self.language,
            "version": self.version,
            "bundle_version": self.bundle.version,
            "bundle_hash": self.bundle.hash,
            "units": len(self.bundle.units),
            "pages": len(self.bundle.pages),
            "embedder": None
            if embedder is None
            else {"name": embedder.name, "model": embedder.model, "dims": embedder.dims},
            "mode": self.mode,
            "retriever": self.mode,
            "threshold": self.gate_params(self.mode).threshold,
        }

    def gate_params(self, mode: Mode) -> GateParams:
        params = getattr(self.bundle.gate, mode)
        return params if params is not None else default_params(mode, self.params)

    def search(self, text: str) -> Ranking:
        dense = self.searcher.dense
        return self.searcher.search(text, dense.embed(text) if dense is not None else None)

    def judge(self, ranking: Ranking) -> tuple[bool, float, int]:
        params = self.gate_params(ranking.mode)
        score = gate_score(ranking.signals, params, self.params)
        return score >= params.threshold, score, confidence(score, params.threshold)

    def page_first(self, page: str | None, ranking: Ranking) -> list[int]:
        """The reader's page's closest units (by the ranking, then by the lexical list)."""
        if not page:
            return []
        candidates = self.page_units.get(page_key(page, self.prefix))
        if not candidates:
            return []
        rank = {u: i for i, u in enumerate(ranking.order)}
        lexical_rank = {u: i for i, (u, _) in enumerate(ranking.lexical)}
        best = sorted(
            candidates,
            key=lambda u: (rank.get(u, len(rank)), lexical_rank.get(u, len(lexical_rank)), u),
        )
        return best[: self.params.page_first_units]

    @property
    def cognates(self) -> Cognates:
        """The corpus words foreign follow-ups are matched to, indexed on first use."""
        if self._cognates is None:
            self._cognates = Cognates(self.searcher.lexical, self.params.cognate_prefix)
        return self._cognates

    def rescue_question(self, anchors: Sequence[str], question: str) -> str | None:
        """The composed question a follow-up the gate refused may pass on, or None when
        it brings a subject of its own the corpus does not cover (``followup``)."""
        return rescue_question(
            self.searcher.lexical,
            self.cognates,
            self.params,
            anchors,
            question,
            lambda text: self.search(text).order,
        )

    def retrieve(self, request: AskRequest) -> Retrieval:
        """Stage 3: retrieval and the gate, with the composed follow-up as a rescue."""
        ranking = self.search(request.question)
        passed, score, conf = self.judge(ranking)
        rescued = False
        anchors = anchor_questions(request.history)
        composed = (
            self.rescue_question(anchors, request.question) if anchors and not passed else None
        )
        if composed is not None:
            composed_ranking = self.search(composed)
            c_passed, c_score, c_conf = self.judge(composed_ranking)
            if c_passed:
                ranking, passed, score, conf, rescued = (
                    composed_ranking,
                    True,
                    c_score,
                    c_conf,
                    True,
                )
        return Retrieval(
            site=self,
            ranking=ranking,
            passed=passed,
            score=score,
            confidence=conf,
            rescued=rescued,
            page_first=self.page_first(request.page, ranking),
        )


# --- The model-free results, and a whole model-free turn -------------------------------


def opening_result(
    request: AskRequest,
    site_name: str,
    templates: Mapping[str, Mapping[str, str]] | None,
    base: Mapping[str, Any],
) -> tuple[Result | None, AskRequest]:
    """Stages 1 and 2: a pasted credential, then a purely social message, end the turn.

    Returns the result that ends the turn (or None) and the request the turn goes on with:
    `screen_request` has dropped a page or history item that carried a credential."""
    screened = screen_request(request)
    request = screened.request
    found = screened.credential
    if found is not None:
        credential = Result(
            kind="credential",
            markdown=credential_reply(found, framing_for(request.lang)),
            credential_kind=found.kind,
            **base,
        )
        return credential, request
    social = match_social(request.question, site_name, templates)
    if social is not None:
        return Result(kind="social", markdown=social.markdown, **base), request
    return None, request


def refusal_result(
    site_name: str,
    closest: list[PageRef],
    common: Mapping[str, Any],
    framing: Framing = ENGLISH,
) -> Result:
    blocks = refusal_blocks(site_name, closest, framing)
    return Result(
        kind="refusal", markdown=to_markdown(blocks), blocks=blocks, closest=closest, **common
    )


def passages_result(
    question: str,
    units: Sequence[UnitRecord],
    common: Mapping[str, Any],
    framing: Framing = ENGLISH,
) -> Result:
    """Above the gate with no model answer: the best excerpts, each cited."""
    blocks = passages_blocks(question, units, framing)
    citations = []
    for n, u in enumerate(units, start=1):
        page_title = page_title_of(u.title, u.breadcrumb)
        citations.append(Citation(n, u.id, u.url, u.title, page_title, preview(u.text)))
    return Result(
        kind="passages",
        markdown=to_markdown(blocks),
        blocks=blocks,
        citations=citations,
        **common,
    )


def new_turn_id() -> str:
    return uuid.uuid4().hex


def ask_without_model(
    site: Site,
    request: AskRequest,
    templates: Mapping[str, Mapping[str, str]] | None = None,
    turn_id: Callable[[], str] = new_turn_id,
) -> Result:
    """A whole turn with no model: stages 1-3, then ``passages`` or a ``refusal``. Static
    mode answers with this; the server's turn runs the same steps around its model."""
    base: dict[str, Any] = {"turn_id": turn_id(), "bundle_hash": site.bundle.hash}
    opening, request = opening_result(request, site.name, templates, base)
    if opening is not None:
        return opening
    retrieval = site.retrieve(request)
    common = retrieval.common(base)
    framing = framing_for(request.lang)
    if not retrieval.passed:
        return refusal_result(site.name, retrieval.closest_pages(), common, framing)
    return passages_result(request.question, retrieval.shown_units(), common, framing)
