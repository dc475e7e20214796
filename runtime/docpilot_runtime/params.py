"""Every retrieval and gate tunable, in one frozen dataclass with its default and why.

The turn core (``retrieval``), the gate (``gate``), the build-time calibration and the
benchmarks all read a ``RetrievalParams``; a variant is ``dataclasses.replace(DEFAULT,
...)``, never a patched module constant. Pure Python, for the browser core.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

Rerank = Literal["fused", "dense"]


def _frozen(value: dict[str, dict[str, float]]) -> Mapping[str, Mapping[str, float]]:
    return MappingProxyType({k: MappingProxyType(v) for k, v in value.items()})


@dataclass(frozen=True)
class RetrievalParams:
    """The tunables of stages 3 (retrieval, gate) and of what a turn shows.

    * ``rrf_k`` (60): Reciprocal Rank Fusion's constant; each list adds
      ``weight / (k + rank)`` to every unit it names (Cormack et al.'s default).
    * ``lexical_weight`` (1.0), ``dense_weight`` (0.5): each channel's vote in the
      fusion. The dense vote counts half: 1-bit vectors are the weaker ranking channel
      on section-level docs retrieval (``benchmarks/bench_retrieval.py``).
    * ``rerank`` ("fused"): how the fused pool is finally ordered. "dense" re-ranks it
      by the query's cosine to each unit's sign bits (seed 000's design); measured on
      the development set it loses first-place hits (``benchmarks/README.md``), so the
      fused order is the default. The gate does not depend on it.
    * ``channel_depth`` (50): units each channel contributes to the fusion.
    * ``dense_candidates`` (200): Hamming candidates rescored with the float query.
    * ``pool`` (30): fused units kept for the answer and the closest pages.
    * ``answer_units`` (4): excerpts a ``passages`` answer quotes.
    * ``page_first_units`` (2): units of the reader's page that join the model's input
      first (seed 003); they never count toward confidence and are never shown as
      passages unless they rank there on their own.
    * ``closest_pages`` (5): pages a refusal lists.
    * ``min_ranked`` (10): ``ranked`` lists at least this many units where it can.
    * ``gate_weights``: the fixed weight of each raw signal in the gate score, per mode
      (not fitted per corpus). Chosen on the dev sets' tune halves
      (``benchmarks/bench_gate.py``) as the weights that refused the most near-misses
      while every tune half still answered >= 0.95 of its covered questions: in hybrid
      mode coverage 3/7, known share 2/7, lexical margin and dense strength 1/7 each
      (the dense cosine is as high on near-misses as on covered questions, so it counts
      little); in lexical mode strength 0.5, coverage and known share 0.25 each.
    * ``clip_low`` (-1.0), ``clip_high`` (1.5): bounds of a signal's position between
      its calibrated anchors, so one extreme signal cannot outvote the others.
    * ``min_span``: the least distance between a signal's two anchors; where a corpus
      barely separates the probe sets on one signal, dividing by that gap would turn
      noise into a full vote.
    * ``query_term_cap`` (16): a question is searched with at most this many terms, its
      rarest ones: pasted tracebacks and code add dozens of common tokens that bury the
      few that name the subject.
    * ``release_prior`` (0.5): what a unit of a release-notes or changelog page
      (``lexical.release_pages``) is worth in the lexical list, as a factor. Such pages
      mention everything once and crowded out the page that answers.
    * ``page_support`` (0.2): each unit in the lexical list gains this share of the best
      other unit of its page in the list, so a page with several matching sections
      outranks one lucky section elsewhere (page-level aggregation).
    All three were chosen on the dev sets' tune halves (``benchmarks/bench_lexical.py``).
    * ``gate_threshold``: per mode, the probe set and quantile of its gate scores that
      make the threshold: hybrid ("salads", 0.05), lexical ("off_topic", 0.9);
      ``threshold_range`` (0.1, 0.75) clamps it (``gate.calibrate_mode`` says why).
    * ``rescue_unseen_terms`` (0): a follow-up the gate refuses may still pass on the
      composed question (earlier question + follow-up) only when at most this many of its
      own terms (beyond the earlier question's) are absent from the corpus. Measured on
      the dev sets' tune halves (``benchmarks/bench_conversation.py --features``): every
      English elliptical follow-up had 0 such terms, every uncovered follow-up the
      composed channel carried past the gate had 1-5 (its subject: "banana bread",
      "Okta", "licence"); neither the follow-up's own gate score, its length, nor the
      share of its terms the composed winner holds separated the two. Follow-ups in a
      language the corpus is not written in also have unseen terms and are no longer
      rescued: there the lexical channel cannot tell a follow-up from a new question.
    """

    rrf_k: int = 60
    lexical_weight: float = 1.0
    dense_weight: float = 0.5
    rerank: Rerank = "fused"
    channel_depth: int = 50
    dense_candidates: int = 200
    pool: int = 30
    answer_units: int = 4
    page_first_units: int = 2
    closest_pages: int = 5
    min_ranked: int = 10
    gate_weights: Mapping[str, Mapping[str, float]] = field(
        default_factory=lambda: _frozen(
            {
                "hybrid": {
                    "lexical_coverage": 3 / 7,
                    "known_share": 2 / 7,
                    "lexical_margin": 1 / 7,
                    "dense_strength": 1 / 7,
                },
                "lexical": {
                    "lexical_strength": 0.5,
                    "lexical_coverage": 0.25,
                    "known_share": 0.25,
                },
            }
        )
    )
    clip_low: float = -1.0
    clip_high: float = 1.5
    min_span: Mapping[str, float] = field(
        default_factory=lambda: MappingProxyType(
            {
                "lexical_strength": 0.1,
                "lexical_margin": 0.1,
                "dense_strength": 0.05,
                "dense_margin": 0.03,
                "lexical_coverage": 0.1,
                "known_share": 0.1,
            }
        )
    )
    query_term_cap: int = 16
    release_prior: float = 0.5
    page_support: float = 0.2
    gate_threshold: Mapping[str, tuple[str, float]] = field(
        default_factory=lambda: MappingProxyType(
            {"hybrid": ("salads", 0.05), "lexical": ("off_topic", 0.9)}
        )
    )
    threshold_range: tuple[float, float] = (0.1, 0.75)
    rescue_unseen_terms: int = 0


DEFAULT_PARAMS = RetrievalParams()
