"""Stage 3: hybrid retrieval over one site's bundle, and the gate's verdict on it.

Both channels always run: BM25+ over the units' text, title and breadcrumb, and a
Hamming scan of the 1-bit vectors rescored with the float query. The two ranked lists
are fused by Reciprocal Rank Fusion (k = 60: each list adds 1 / (k + rank) to every
unit it names); RERANK says how the fused pool is ordered. With no embedder, or one
that fails, the dense list is empty and the gate switches to its lexical threshold.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from . import stages
from .bundle import Bundle, UnitRecord, load_bundle
from .dense import DenseIndex
from .embedders import Embedder, EmbedderError, EmbedderSpec, load_embedder
from .gate import Signals, confidence, default_params, gate_score, margin
from .lexical_numpy import NumpyLexical
from .settings import Settings
from .tokenize import query_terms
from .types import AskRequest, PageRef

log = logging.getLogger("docpilot.retrieval")

RRF_K = 60
# Channel weights in the fusion. The dense vote counts half: 1-bit WordLlama vectors are
# the weaker ranking channel on section-level docs retrieval (FIELD-NOTES found the same).
RRF_WEIGHTS = {"lexical": 1.0, "dense": 0.5}
# How the fused pool is finally ordered: "fused" keeps the RRF order, "dense" re-ranks the
# pool by dense cosine (as seed 000 describes), "blend" sorts by RRF score plus cosine / k.
# Measured on the development set (benchmarks/bench_retrieval.py, 64 answerable
# questions): fused at half dense weight found the right page first 39 times and in the
# top five 55 times; dense re-ranking 34-35 / 55-56, blend 38 / 53-54. Re-ranking by
# cosine loses first-place hits, so the fused order is kept. The gate does not depend on
# this choice: it reads the raw channel signals.
RERANK: Literal["fused", "dense", "blend"] = "fused"
DENSE_CANDIDATES = 200  # Hamming candidates rescored with the float query
Mode = Literal["hybrid", "lexical"]


@dataclass
class Ranking:
    """One query's retrieval: the final order and the raw signals behind it."""

    order: list[int]
    mode: Mode
    signals: Signals
    lexical: list[tuple[int, float]] = field(default_factory=list)
    dense: list[tuple[int, float]] = field(default_factory=list)


def rrf(lists: Sequence[tuple[float, Sequence[int]]], k: int = RRF_K) -> list[tuple[int, float]]:
    """Reciprocal Rank Fusion of ranked lists given as (weight, ids best first)."""
    scores: dict[int, float] = {}
    for weight, ids in lists:
        for rank, unit in enumerate(ids, start=1):
            scores[unit] = scores.get(unit, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


class Searcher:
    """Runs both channels over one bundle's indexes; shared by the runtime and the
    build-time gate calibration."""

    def __init__(self, lexical: NumpyLexical, dense: DenseIndex | None) -> None:
        self.lexical = lexical
        self.dense = dense

    def cosines(self, query: np.ndarray, rows: Sequence[int]) -> np.ndarray:
        assert self.dense is not None
        centred = (query - self.dense.center).astype(np.float32)
        norm = float(np.linalg.norm(centred)) * float(np.sqrt(self.dense.dims)) or 1.0
        signs = self.dense.unit_signs(np.asarray(rows, dtype=np.int64))
        result: np.ndarray = signs @ centred / norm
        return result

    def search(self, text: str, query_vector: np.ndarray | None) -> Ranking:
        terms = query_terms(text)
        lexical = self.lexical.search(terms, stages.CHANNEL_DEPTH)
        lex_strength, lex_margin = stages.lexical_signals(self.lexical, terms, lexical)
        if self.dense is None or query_vector is None:
            order = [unit for unit, _ in lexical[: stages.POOL]]
            signals = Signals(lexical_strength=lex_strength, lexical_margin=lex_margin)
            return Ranking(order=order, mode="lexical", signals=signals, lexical=lexical)
        rows, scores = self.dense.search(query_vector, DENSE_CANDIDATES)
        dense = [
            (int(r), float(s)) for r, s in zip(rows[: stages.CHANNEL_DEPTH], scores, strict=False)
        ]
        fused = rrf(
            [
                (RRF_WEIGHTS["lexical"], [u for u, _ in lexical]),
                (RRF_WEIGHTS["dense"], [u for u, _ in dense]),
            ]
        )[: stages.POOL]
        order = [u for u, _ in fused]
        if RERANK != "fused" and order:
            cos = self.cosines(query_vector, order)
            if RERANK == "dense":
                keyed = sorted(zip(order, cos, strict=True), key=lambda p: (-p[1], p[0]))
            else:
                bonus = {u: float(c) for u, c in zip(order, cos, strict=True)}
                keyed = sorted(
                    ((u, s + bonus[u] / RRF_K) for u, s in fused), key=lambda p: (-p[1], p[0])
                )
            order = [u for u, _ in keyed]
        dense_scores = [s for _, s in dense]
        signals = Signals(
            lexical_strength=lex_strength,
            lexical_margin=lex_margin,
            dense_strength=dense_scores[0] if dense_scores else 0.0,
            dense_margin=margin(dense_scores, 5),
        )
        return Ranking(order=order, mode="hybrid", signals=signals, lexical=lexical, dense=dense)


@dataclass
class Retrieval:
    """The gate's verdict on a turn, with what the rest of the turn needs."""

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

    def ordered(self) -> list[int]:
        return stages.with_page_first(self.page_first, self.ranking.order)

    def ranked_ids(self) -> list[str]:
        return stages.ranked_ids(self.ordered(), self.ranking.lexical, self.site.bundle.units)

    def answer_units(self, limit: int = stages.ANSWER_UNITS) -> list[UnitRecord]:
        units = self.site.bundle.units
        return [units[u] for u in self.ordered()[:limit]]

    def closest_pages(self) -> list[PageRef]:
        return stages.closest_pages(self.ordered(), self.site.bundle.units, self.site.bundle.pages)

    def progress(self) -> str:
        if not self.passed:
            return "No section of the documentation covers this closely"
        found = len(self.answer_units())
        return f"Found {found} result{'s' if found != 1 else ''}"


@dataclass
class Site:
    """One bundle, loaded once, with its indexes and its query embedder."""

    prefix: str
    bundle: Bundle
    searcher: Searcher
    embedder: Embedder | None
    gate: dict[str, Any]
    page_units: dict[str, list[int]]
    embedder_error: str | None = None
    unit_rows: dict[str, int] = field(default_factory=dict)  # unit id -> row

    @property
    def name(self) -> str:
        return self.bundle.site_name

    @property
    def mode(self) -> Mode:
        return (
            "hybrid" if self.embedder is not None and self.searcher.dense is not None else "lexical"
        )

    def describe(self) -> dict[str, Any]:
        embedder = self.bundle.embedder
        return {
            "prefix": self.prefix,
            "bundle_version": self.bundle.data.get("version"),
            "bundle_hash": self.bundle.hash,
            "units": len(self.bundle.units),
            "pages": len(self.bundle.pages),
            "embedder": None
            if embedder is None
            else {
                "name": embedder["name"],
                "model": embedder.get("model"),
                "dims": embedder["dims"],
            },
            "mode": self.mode,
            "retriever": self.mode,
            "threshold": self.gate_params(self.mode)["threshold"],
        }

    def gate_params(self, mode: Mode) -> dict[str, Any]:
        params = self.gate.get(mode)
        return params if isinstance(params, dict) else default_params(mode)

    def embed_query(self, text: str) -> np.ndarray | None:
        if self.embedder is None or self.searcher.dense is None:
            return None
        try:
            return np.asarray(self.embedder.embed_query(text), dtype=np.float32)
        except (EmbedderError, OSError, ValueError) as exc:
            log.warning(
                "query embedder failed (%s); answering in lexical mode", exc.__class__.__name__
            )
            return None

    def search(self, text: str) -> Ranking:
        return self.searcher.search(text, self.embed_query(text))

    def judge(self, ranking: Ranking) -> tuple[bool, float, int]:
        params = self.gate_params(ranking.mode)
        score = gate_score(ranking.signals, params)
        threshold = float(params["threshold"])
        return score >= threshold, score, confidence(score, threshold)

    def retrieve(self, request: AskRequest) -> Retrieval:
        ranking = self.search(request.question)
        passed, score, conf = self.judge(ranking)
        rescued = False
        composed = stages.composed_question(request.history, request.question)
        if composed is not None:
            composed_ranking = self.search(composed)
            c_passed, c_score, c_conf = self.judge(composed_ranking)
            if c_passed and not passed:
                ranking, passed, score, conf, rescued = (
                    composed_ranking,
                    True,
                    c_score,
                    c_conf,
                    True,
                )
        page_first = (
            stages.page_first(
                request.page, self.prefix, self.page_units, ranking.order, ranking.lexical
            )
            if request.page
            else []
        )
        return Retrieval(
            site=self,
            ranking=ranking,
            passed=passed,
            score=score,
            confidence=conf,
            rescued=rescued,
            page_first=page_first,
        )


def query_embedder(bundle: Bundle, settings: Settings) -> tuple[Embedder | None, str | None]:
    """The embedder that matches the bundle's, or None (lexical mode) with the reason."""
    info = bundle.embedder
    if info is None:
        return None, "the bundle has no embedder (embedder: none)"
    hosted = settings.embedder
    spec = EmbedderSpec(
        name=str(info["name"]),
        model=str(info.get("model") or ""),
        dims=int(info["dims"]),
        base_url=hosted.base_url if info["name"] == "openai" else "",
        api_key_env=hosted.api_key_env if info["name"] == "openai" else "",
        timeout=hosted.timeout,
    )
    try:
        return load_embedder(spec), None
    except EmbedderError as exc:
        log.warning("%s: query embedder unavailable (%s); lexical mode", bundle.path, exc)
        return None, str(exc)


def load_site(site_dir: Path, prefix: str, settings: Settings) -> Site:
    """Load and check one site's bundle and build its indexes (vectors stay in place)."""
    bundle = load_bundle(site_dir)
    lexical = NumpyLexical(bundle.data["lexical"])
    dense = None
    vectors = bundle.data.get("vectors")
    embedder_info = bundle.embedder
    if vectors is not None and embedder_info is not None:
        dims = int(vectors["dims"])
        raw_center = embedder_info.get("center")
        center = (
            np.frombuffer(raw_center, dtype="<f4") if raw_center else np.zeros(dims, np.float32)
        )
        dense = DenseIndex.from_bytes(vectors["bits"], int(vectors["count"]), dims, center)
    embedder, error = query_embedder(bundle, settings) if dense is not None else (None, None)
    page_units: dict[str, list[int]] = {}
    for i, unit in enumerate(bundle.units):
        page_units.setdefault(bundle.pages[unit.page].url, []).append(i)
    return Site(
        prefix=prefix,
        bundle=bundle,
        searcher=Searcher(lexical, dense),
        embedder=embedder,
        gate=bundle.gate,
        page_units=page_units,
        embedder_error=error,
        unit_rows={u.id: i for i, u in enumerate(bundle.units)},
    )
