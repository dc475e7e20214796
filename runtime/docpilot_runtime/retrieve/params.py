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
    * ``lexical_weight`` (1.0), ``dense_weight`` (0.1): each channel's vote in the
      fusion. With WordLlama's 1-bit vectors the dense list is the weaker ranking channel
      on real questions (alone: R@1 0.63 against the lexical list's 0.82 on the dev sets'
      tune halves), so its vote mostly breaks near-ties: 0.1 was the best weight tried on
      the tune halves (0.05-1), above the old 0.5 by 0.03 R@1 and 0.016 R@5; the test
      halves gained R@1 (+0.033) and lost one question at R@5 (``benchmarks/bench_dense.py``).
    * ``rerank`` ("fused"): how the fused pool is finally ordered. "dense" re-ranks it
      by the query's cosine to each unit's sign bits (seed 000's design); on the dev
      sets it loses a fifth of the first-place hits (``benchmarks/bench_dense.py``), so
      the fused order is the default. The gate does not depend on it.
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
      (not fitted per corpus: the per-corpus step is the calibration of each signal's
      anchors and of the threshold). Chosen on the tune halves of the sets made from real
      threads (``benchmarks/bench_gate_choice.py``: every weighting 0-3 of the signals
      under every threshold rule) as the one that refuses the most off-topic questions
      while answering >= 0.95 of the covered ones (hybrid; lexical mode reaches 0.93 at
      most) and still refusing >= 0.9 of the hand-written sets' clearly off-topic ones:
      hybrid ``dense_strength`` 3/8, ``lexical_coverage`` and ``names_known`` 2/8 each,
      ``lexical_strength`` 1/8; lexical ``known_share`` 3/4, ``names_known`` 1/4. On
      those tune halves the hybrid gate went from answering 0.85 of the covered questions
      and refusing 0.26 of the off-topic ones to 0.96 and 0.34; the lexical one from
      0.69 and 0.51 to 0.93 and 0.26. No weighting of these signals gets near refusing
      0.95 of real off-topic questions while answering the covered ones: the best reaches
      0.34 (that script's table is the ceiling).
    * ``clip_low`` (-1.0), ``clip_high`` (1.5): bounds of a signal's position between
      its calibrated anchors, so one extreme signal cannot outvote the others.
    * ``min_span``: the least distance between a signal's two anchors; where a corpus
      barely separates the probe sets on one signal, dividing by that gap would turn
      noise into a full vote.
    * ``query_term_cap`` (16): a question is searched with at most this many terms, its
      rarest ones: pasted tracebacks and code add dozens of common tokens that bury the
      few that name the subject.
    * ``search_compounds`` (False): whether a question's compounds (``httpx.post``) are
      searched beside their parts (``tokenize.search_term_counts``); they were a third
      vote for one word of the question.
    * ``query_tf_k3`` (4.0): a search term the question uses q times weighs
      ``(k3 + 1) q / (k3 + q)`` times its idf (Robertson's query-term frequency; 1 for a
      term used once, at most 5 here). Readers repeat their subject ("proxies … proxy …
      a proxy"); 4 and 8 tied on the tune halves, and 4 lets a token a pasted
      traceback repeats weigh least.
    * ``release_prior`` (0.5): what a unit of a release-notes or changelog page
      (``lexical.release_pages``) is worth in the lexical list, as a factor. Such pages
      mention everything once and crowded out the page that answers.
    * ``page_support`` (0.2): each unit in the lexical list gains this share of the best
      other unit of its page in the list, so a page with several matching sections
      outranks one lucky section elsewhere (page-level aggregation).
    All of these were chosen on the dev sets' tune halves (``benchmarks/bench_lexical.py``).
    * ``gate_threshold``: per mode, the probe set and quantile of its gate scores that
      make the threshold: hybrid ("missing_option", 0.5: the median of the questions
      about an option that does not exist), lexical ("off_topic", 0.9);
      ``threshold_range`` (0.1, 0.75) clamps it (``gate.calibrate_mode`` says why).
      Chosen with the weights (``benchmarks/bench_gate_choice.py``).
    * ``fixed_anchors``: signals on a scale of their own, not placed between the probe
      medians: ``names_known`` is 1 or 0.
    * ``rescue_unseen_terms`` (0), ``rescue_foreign_share`` (0.5), ``rescue_content_df``
      (0.2), ``rescue_held_units`` (3), ``cognate_prefix`` (5): which refused follow-ups
      may pass on the composed question (``followup``). A follow-up in the corpus's
      language passes only when at most ``rescue_unseen_terms`` of its own content words
      (beyond the earlier question's, function words of any language set aside) are
      absent from the corpus: every English elliptical follow-up on the tune halves had
      none, every uncovered one the composed channel carried past the gate had 1-5
      ("banana bread", "Okta", "licence"). A follow-up is in another language when under
      ``rescue_foreign_share`` of its terms are known to the corpus (tune halves: every
      German, French, Spanish and Chinese follow-up under 0.30, every English one over
      0.32). There unseen words are expected; it passes when each of its words the corpus
      knows (exactly, or as a cognate sharing ``cognate_prefix`` letters) and holds in at
      most ``rescue_content_df`` of its units occurs in one of the composed question's
      ``rescue_held_units`` best units, and is then composed in those corpus words. On
      the tune halves this answered 5 of the 7 foreign elliptical follow-ups the gate
      and the first rule refused in bundle mode (5 of 9 in lexical mode), and none of the
      uncovered ones (their corpus words, "back" in "backe", "limit" and "ip" in
      "limiter ... par IP", lie elsewhere; "question" is in 46 % of example-site's units).
      Since then (2026-12-02, issue 9): a foreign follow-up whose unseen words include
      one written like a name (``followup.name_terms``) is refused, and one with no
      unseen word is composed in corpus words too; on the tune halves that carried fewer
      uncovered follow-ups past the gate (follow-up set 2 -> 1, lexical 4 -> 2) and
      answered one more elliptical one, the test halves unchanged.
      Passing a foreign follow-up with no rare corpus word to check when it opens with
      some language's "and" (CLDR list patterns) and has at most 3 unseen words answered
      9 more of the follow-up set's tune elliptical follow-ups (8 -> 16 of 25) but on its
      test half carried 2 uncovered ones (0 before): measured at ``d511542``, not kept.
    * ``rescue_known_df`` (2): for that share, a term is known to the corpus when at
      least this many units use it. One English unit saying "a worker that dies" had
      made German "die" known and a German follow-up count as English. Tune halves: same
      on the dev sets, one more foreign elliptical follow-up answered on the follow-up
      set in lexical mode; test halves: one more on the dev sets in lexical mode, none
      carried in either.
    """

    rrf_k: int = 60
    lexical_weight: float = 1.0
    dense_weight: float = 0.1
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
                    "lexical_strength": 1 / 8,
                    "lexical_coverage": 2 / 8,
                    "names_known": 2 / 8,
                    "dense_strength": 3 / 8,
                },
                "lexical": {
                    "known_share": 3 / 4,
                    "names_known": 1 / 4,
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
                "names_known": 0.5,
            }
        )
    )
    # Signals whose scale is their own (0 or 1), not placed between probe medians.
    fixed_anchors: Mapping[str, tuple[float, float]] = field(
        default_factory=lambda: MappingProxyType({"names_known": (0.0, 1.0)})
    )
    query_term_cap: int = 16
    search_compounds: bool = False
    query_tf_k3: float = 4.0
    release_prior: float = 0.5
    page_support: float = 0.2
    gate_threshold: Mapping[str, tuple[str, float]] = field(
        default_factory=lambda: MappingProxyType(
            {"hybrid": ("missing_option", 0.5), "lexical": ("off_topic", 0.9)}
        )
    )
    threshold_range: tuple[float, float] = (0.1, 0.75)
    rescue_unseen_terms: int = 0
    rescue_foreign_share: float = 0.5
    rescue_known_df: int = 2
    rescue_content_df: float = 0.2
    rescue_held_units: int = 3
    cognate_prefix: int = 5


DEFAULT_PARAMS = RetrievalParams()
