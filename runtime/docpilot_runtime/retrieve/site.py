"""Stage 3 for one bundle: a `Site` retrieves, the gate judges, a follow-up may be rescued.

`Site` is the turn core every host shares: the server builds it with numpy scorers and
the query embedder (``sites.loader``), the browser's static mode with the pure-Python
scorer (``browser.worker``). Its `retrieve` returns a `Retrieval`: the gate's verdict and
what the rest of the turn reads (the closest pages, the excerpts, the model's input order).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from docpilot_runtime.bundle.schema import Bundle, GateParams, UnitRecord, unit_column
from docpilot_runtime.retrieve.followup import (
    Cognates,
    rescue_question,
    rewrite_may_carry,
    rewrite_reason,
)
from docpilot_runtime.retrieve.gate import (
    confidence,
    default_params,
    gate_score,
    shares_a_word,
)
from docpilot_runtime.retrieve.params import RetrievalParams
from docpilot_runtime.retrieve.search import Mode, Ranking, Searcher
from docpilot_runtime.retrieve.tokenize import query_terms
from docpilot_runtime.shared.framing import ENGLISH, Framing, framing_for
from docpilot_runtime.shared.languages import (
    DOCS_SAMPLE_UNITS,
    question_language,
    same_language,
    sections_language,
)
from docpilot_runtime.shared.paths import page_key
from docpilot_runtime.shared.types import (
    COMPLETED_KINDS,
    AskRequest,
    HistoryItem,
    PageRef,
    TurnBasis,
)


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
    rewritten: str = ""  # the standalone question it was searched with, when rewritten
    # The question's language when it is not the docs' ("" otherwise or when unsure).
    reader_language: str = ""

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
        ids = unit_column(self.site.bundle.units, "id")
        return [ids[u] for u in order]

    def shown_units(self) -> list[UnitRecord]:
        """The excerpts a ``passages`` answer quotes: the best on their own merit."""
        units = self.site.bundle.units
        return [units[u] for u in self.ranking.order[: self.params.answer_units]]

    def closest_pages(self) -> list[PageRef]:
        """The distinct pages of the best units, up to closest_pages; when no unit shares
        a word with the question, the site's first pages (its home and the pages its
        navigation starts with), so a refusal never lists nothing."""
        bundle = self.site.bundle
        order = self.ranking.order or [u for u, _ in self.ranking.lexical]
        pages_of = unit_column(bundle.units, "page")
        pages = [pages_of[u] for u in order] or list(range(len(bundle.pages)))
        found: list[PageRef] = []
        for index in dict.fromkeys(pages):
            found.append(PageRef(url=bundle.pages[index].url, title=bundle.pages[index].title))
            if len(found) >= self.params.closest_pages:
                break
        return found

    @property
    def matched_nothing(self) -> bool:
        """No unit shares a word (or, in hybrid mode, a vector) with the question."""
        return not self.ranking.order and not self.ranking.lexical

    def framing(self, page_language: str | None = None) -> Framing:
        """The runtime's words for this turn: the page's language, unless the page is in
        the docs' English (or says nothing) and the question is plainly in another
        language, which then gets its own; a refusal of such a question adds that the
        docs are in English and an English question finds more, and a refusal that found
        nothing at all leads its pages as a place to start."""
        page = page_language or ""
        docs = self.site.docs_language
        reader = self.reader_language
        readers = reader and (not page or same_language(page, docs)) and framing_for(reader)
        framing = readers or framing_for(page)
        if readers and same_language(docs, "en") and not self.passed:
            framing = replace(framing, refusal=f"{framing.refusal} {framing.english_docs}")
        if self.matched_nothing:
            framing = replace(framing, closest=framing.start_here)
        return framing

    def progress(self, framing: Framing = ENGLISH) -> str:
        if not self.passed:
            return framing.not_covered
        return framing.found_results(len(self.shown_units()))

    def basis(self, opening: TurnBasis) -> TurnBasis:
        """The fields every result after stage 3 carries."""
        return replace(
            opening,
            confidence=self.confidence,
            retriever=self.retriever,
            rescued=self.rescued,
            ranked=tuple(self.ranked_ids()),
        )


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
    _cognates: Cognates | None = field(init=False, repr=False, default=None)
    _docs_language: str | None = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        if not self.prefix.endswith("/"):
            self.prefix += "/"
        self.page_units = {}
        keys = [page_key(p.url) for p in self.bundle.pages]
        for i, page in enumerate(unit_column(self.bundle.units, "page")):
            self.page_units.setdefault(keys[page], []).append(i)

    @cached_property
    def unit_rows(self) -> dict[str, int]:
        """Unit id -> row, made on first use (the MCP tools look units up by id)."""
        return {u: i for i, u in enumerate(unit_column(self.bundle.units, "id"))}

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
        if not shares_a_word(ranking.signals):
            return False, score, 0
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
    def docs_language(self) -> str:
        """The language the docs are written in: read from the opening of the first
        sections, else the manifest's ("" when neither says). The text leads because a
        static bundle carries no manifest language: both modes must frame a turn alike."""
        if self._docs_language is None:
            units = self.bundle.units[:DOCS_SAMPLE_UNITS]
            self._docs_language = (
                sections_language((u.title, u.text) for u in units) or self.language
            )
        return self._docs_language

    def reader_language(self, question: str) -> str:
        """The question's language when it plainly is not the docs' ("" otherwise)."""
        found = question_language(question)
        return "" if same_language(found, self.docs_language) else found

    def with_cognates(self, question: str) -> str:
        """A question in another language, with a corpus word beside each of its words
        the corpus never uses but has a cognate of ("certificats" -> "certificat",
        "configuración" -> "configur"): what it shares with the docs (names, options,
        code, cognates) is then all it is ranked by."""
        index = self.searcher.lexical
        unseen = [t for t in query_terms(question) if index.document_frequency(t) == 0]
        found = [c for c in dict.fromkeys(self.cognates.of(t) for t in unseen) if c]
        return " ".join([question, *found])

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

    def rewrite_reason(self, request: AskRequest) -> str:
        """Why ``request`` would be rewritten before retrieval ("" when it stands alone):
        ``followup.rewrite_reason``."""
        anchors = anchor_questions(request.history)
        return rewrite_reason(self.searcher.lexical, self.params, anchors, request.question)

    def retrieve_rewritten(
        self, request: AskRequest, rewritten: str, first: Retrieval
    ) -> Retrieval:
        """Stage 3 with a model's standalone rewrite of the question as search terms: its
        ranking replaces ``first`` when the gate passes it and the rewrite may carry the
        question (``followup.rewrite_may_carry``); else ``first`` stands."""
        anchors = anchor_questions(request.history)
        if not rewrite_may_carry(self.searcher.lexical, self.params, anchors, request.question):
            return first
        ranking = self.search(rewritten)
        passed, score, conf = self.judge(ranking)
        if not passed:
            return first
        return Retrieval(
            site=self,
            ranking=ranking,
            passed=True,
            score=score,
            confidence=conf,
            rescued=first.rescued or not first.passed,
            page_first=self.page_first(request.page, ranking),
            rewritten=rewritten,
            reader_language=first.reader_language,
        )

    def retrieve(self, request: AskRequest) -> Retrieval:
        """Stage 3: retrieval and the gate, with the composed follow-up as a rescue.

        The gate judges the question's own words; what the turn shows (its ranking, the
        closest pages, the excerpts) may read more: a follow-up after an answered turn is
        ranked by the earlier question and itself, its own words counted twice so a new
        subject of its own still leads ("and how do I turn it off?" finds the feature
        the conversation is about); a question in another language than the docs' is
        ranked with the corpus cognates of its words too (``with_cognates``)."""
        reader = self.reader_language(request.question)
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
        if not rescued:
            text = " ".join([*anchors, request.question, request.question]) if anchors else (
                request.question)
            text = self.with_cognates(text) if reader else text
            if text != request.question:
                # Cognates and the conversation make any question look covered (every
                # translated question passed on the tune halves, uncovered ones too):
                # ranked by them, judged without.
                ranking = replace(self.search(text), signals=ranking.signals)
        return Retrieval(
            site=self,
            ranking=ranking,
            passed=passed,
            score=score,
            confidence=conf,
            rescued=rescued,
            page_first=self.page_first(request.page, ranking),
            reader_language=reader,
        )


