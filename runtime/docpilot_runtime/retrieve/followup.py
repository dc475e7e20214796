"""Which follow-ups the composed channel may rescue, and on what question.

A follow-up the gate refused may pass on the earlier question composed with it, but
only when it depends on the conversation, never when it brings a subject of its own
that the corpus does not cover ("banana bread" after a covered turn). Measured on the
tune halves of the dev sets and of the follow-up set (``benchmarks/devsets/followups/``;
``benchmarks/bench_conversation.py --features``), two cases:

* The follow-up is in the corpus's language: every one of its own content words
  (beyond the earlier question's, function words of any language set aside) must be
  a word the corpus uses. An unseen word there names a new subject.
* The follow-up is in another language (most of its words are unknown to the corpus):
  unseen words are expected, so the rule asks two things, and composes it in the
  corpus's own words when both hold (also when it has no unseen word: "¿y cómo lo hago
  con Gunicorn?" keeps only "gunicorn", not the Spanish words that weigh on the gate):

  - none of its unseen words is written like a name or a term (a digit, two capitals,
    or a capital past the first word, except in a language that capitalises every noun):
    "NTLM", "Prometheus", "2010", "Lyon" name a subject the corpus never does;
  - the words it shares with the corpus (exactly, or as a cognate: "certificats",
    "système", "configuración") and that few units hold are about what the conversation
    is about: each occurs in one of the composed question's best units. With no such
    word there is nothing to check and it is refused. Passing those that open with some
    language's "and" answered more elliptical follow-ups but carried uncovered ones ("en
    kan het een onderbroken download later hervatten?"), which no word-level signal tells
    apart, so it was not kept (benchmarks/README.md, "Conversations").

Pure Python (standard library only): the browser's static mode runs the same rule.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Protocol

from docpilot_runtime.retrieve.params import DEFAULT_PARAMS, RetrievalParams
from docpilot_runtime.retrieve.tokenize import _is_unspaced_script as _is_unspaced
from docpilot_runtime.retrieve.tokenize import query_terms, tokenize

FUNCTION_WORDS_FILE = Path(__file__).with_name("function_words.json")
_WORDS = re.compile(r"[^\W_]+")


class Vocabulary(Protocol):
    """What the rule reads of the lexical index (``lexical.StoredIndex`` has it)."""

    count: int
    vocabulary: dict[str, int]

    def document_frequency(self, term: str) -> int: ...

    def search(self, terms: Sequence[str], limit: int = 50) -> list[tuple[int, float]]: ...


@lru_cache(maxsize=1)
def function_words() -> frozenset[str]:
    """Every language's function words, as the tokenizer spells them (the data file holds
    them tokenized: see tools/function_words/)."""
    return frozenset(_data()["terms"])


@lru_cache(maxsize=1)
def _data() -> dict[str, list[str]]:
    data: dict[str, list[str]] = json.loads(FUNCTION_WORDS_FILE.read_text(encoding="utf-8"))
    return data


@lru_cache(maxsize=1)
def noun_capitalising() -> frozenset[str]:
    """Function words of the languages that capitalise every noun (German)."""
    return frozenset(_data()["noun_capitalising"])


def name_terms(question: str) -> frozenset[str]:
    """The terms of the words written like a name or a term: with a digit ("2014"), two
    capitals or more ("NTLM", "GitHub"), or a capital past the first word, unless the
    question is written in a language that capitalises every noun (most of its function
    words are that language's)."""
    words = _WORDS.findall(unicodedata.normalize("NFKC", question))
    skip = function_words()
    listed = [t for t in query_terms(question) if t in skip]
    capitals_name = not listed or 2 * sum(t in noun_capitalising() for t in listed) < len(
        listed
    )
    names: set[str] = set()
    for position, word in enumerate(words):
        upper = sum(c.isupper() for c in word)
        if (
            any(c.isdigit() for c in word)
            or upper >= 2
            or (upper and word[0].isupper() and position > 0 and capitals_name)
        ):
            names.update(tokenize(word))
    return frozenset(names)


def fold(term: str) -> str:
    """``term`` without its accents: "système" -> "systeme"."""
    if term.isascii():
        return term  # most of a corpus's vocabulary: nothing to fold
    return "".join(c for c in unicodedata.normalize("NFKD", term) if not unicodedata.combining(c))


class Cognates:
    """Corpus words a foreign word is a cognate of: after folding accents, the two share
    a prefix of at least ``prefix`` letters that covers all of the corpus word but at
    most one letter ("certificats" -> "certificat", "système" -> "system")."""

    def __init__(self, index: Vocabulary, prefix: int) -> None:
        self.index = index
        self.prefix = prefix
        self.by_prefix: dict[str, list[tuple[str, str]]] = {}
        for term in index.vocabulary:
            folded = fold(term)
            if len(folded) >= prefix and folded.isalpha():
                self.by_prefix.setdefault(folded[:prefix], []).append((folded, term))

    def of(self, term: str) -> str | None:
        """The corpus word ``term`` is a cognate of (the longest shared prefix; ties go
        to the more frequent word, then the first in order), or None."""
        folded = fold(term)
        if len(folded) < self.prefix or not folded.isalpha():
            return None
        best: tuple[int, int, str] | None = None
        for other, corpus_term in self.by_prefix.get(folded[: self.prefix], ()):
            shared = 0
            for a, b in zip(folded, other, strict=False):
                if a != b:
                    break
                shared += 1
            if len(other) - shared > 1:
                continue
            key = (shared, self.index.document_frequency(corpus_term), corpus_term)
            if best is None or key[:2] > best[:2] or (key[:2] == best[:2] and key[2] < best[2]):
                best = key
        return best[2] if best else None


@dataclass(frozen=True)
class FollowupTerms:
    """What the rule reads of one follow-up: its own content terms (not the earlier
    question's, no function words), those the corpus never uses, and the share of all
    its terms the corpus knows (low: written in another language)."""

    own: tuple[str, ...]
    unseen: tuple[str, ...]
    known_share: float


def followup_terms(
    index: Vocabulary,
    anchors: Sequence[str],
    question: str,
    known_df: int = DEFAULT_PARAMS.rescue_known_df,
) -> FollowupTerms:
    """The follow-up's terms as the rule reads them; a term counts toward the known
    share when at least ``known_df`` units use it (``RetrievalParams.rescue_known_df``)."""
    earlier = {t for a in anchors for t in query_terms(a)}
    terms = query_terms(question)
    df = index.document_frequency
    skip = function_words()
    own = tuple(dict.fromkeys(t for t in terms if t not in earlier and t not in skip))
    known = sum(1 for t in terms if df(t) >= known_df)
    return FollowupTerms(
        own=own,
        unseen=tuple(t for t in own if df(t) == 0),
        known_share=known / len(terms) if terms else 1.0,
    )


def own_unseen_terms(index: Vocabulary, anchors: Sequence[str], question: str) -> int:
    """How many of the follow-up's own content words the corpus never uses."""
    return len(followup_terms(index, anchors, question).unseen)


def rescue_question(
    index: Vocabulary,
    cognates: Cognates,
    params: RetrievalParams,
    anchors: Sequence[str],
    question: str,
    composed_order: Callable[[str], Sequence[int]],
) -> str | None:
    """The composed question a refused follow-up may pass on, or None when it may not be
    rescued (see the module docstring). ``composed_order(text)`` is the retrieval order
    of ``text``; it is called only for a follow-up in another language."""
    composed = " ".join([*anchors, question])
    found = followup_terms(index, anchors, question, params.rescue_known_df)
    foreign = found.known_share < params.rescue_foreign_share
    if len(found.unseen) <= params.rescue_unseen_terms and not foreign:
        return composed
    if not foreign:
        return None  # the corpus's language, and a subject the corpus never names
    df = index.document_frequency
    mapped = [t if df(t) > 0 else cognates.of(t) for t in found.own]
    names = name_terms(question)
    if any(m is None and t in names for t, m in zip(found.own, mapped, strict=True)):
        return None  # it names something the corpus never does: a subject of its own
    words = [t for t in dict.fromkeys(mapped) if t is not None]
    content = [t for t in words if df(t) <= params.rescue_content_df * index.count]
    if not content:
        return None
    best = set(composed_order(composed)[: params.rescue_held_units])
    for term in content:
        if not best & {unit for unit, _ in index.search([term], index.count)}:
            return None
    return " ".join([*anchors, *words])


# A question about a tool in another language is mostly the tool's names ("¿Cómo configuro
# OpenRouter como proveedor en docpilot.toml?"), so its known share can be high. It is read
# as foreign too when under FOREIGN_KNOWN_SHARE of its terms are known and it holds
# FOREIGN_FUNCTION_WORDS function words (of any language) the corpus never uses. On the
# tune halves (example-site's dev set, its follow-up set, the translated questions) this
# caught every German, French and Spanish question (the known share alone missed 4 of 67
# non-English ones) and flagged no English question it did not flag before (1 of 65, an
# off-topic one); any share from 0.6 to 1 did the same there, 0.7 keeps clear of English
# questions on a small corpus, which knows fewer English function words.
FOREIGN_FUNCTION_WORDS = 2
FOREIGN_KNOWN_SHARE = 0.7
# English words among every language's function words: never a sign of another language,
# however small the corpus (a three-page site may never write "where" or "kept").
_ENGLISH_TEXT = """
a about above across after again against all almost alone along already also although
always am among an and another any anybody anyone anything anywhere are around as at away
back be became because become becomes been before behind being below between beyond both
but by came can cannot could did do does doing done down during each either else enough
even ever every few first for from further get gets getting got had has have having he her
here hers herself him himself his how however i if in into is it its itself just keep keeps
kept last least less let like likely made make makes many may me might mine more most
mostly much must my myself near need needs neither never new next no nobody none nor not
nothing now of off often on once one only onto or other others otherwise our ours
ourselves out over own per perhaps please put quite rather really said same saw say says
second see seem seemed seems several shall she should show shown since so some somebody
someone something sometime sometimes somewhere still such take than that the their theirs
them themselves then there therefore these they thing things this those though three
through throughout thus to together too took toward towards two under unless until up
upon us use used uses using very via want wants was way we well went were what whatever
when whenever where whereas whether which while who whoever whole whom whose why will with
within without won would yes yet you your yours yourself yourselves
"""


@lru_cache(maxsize=1)
def english_words() -> frozenset[str]:
    """English words that are among the function words of some language."""
    return frozenset(tokenize(_ENGLISH_TEXT))


def rewrite_reason(
    index: Vocabulary, params: RetrievalParams, anchors: Sequence[str], question: str
) -> str:
    """Why a question would be rewritten into a standalone one before retrieval (a model
    call; ``answer.rewrite``), or "" when it stands on its own: "language" when it is
    written in another language than the corpus (under ``rescue_foreign_share`` of its
    terms known, or FOREIGN_FUNCTION_WORDS function words the corpus never uses: a
    question in Spanish about an English tool is mostly tool names), "follow-up" when
    there is an earlier answered question it may refer to."""
    found = followup_terms(index, [], question, params.rescue_known_df)
    skip = function_words() - english_words()
    unknown = [t for t in query_terms(question) if t in skip and index.document_frequency(t) == 0]
    share = found.known_share
    # Few known terms alone is no sign on a small corpus: some other language must show,
    # as a function word of its own or a script without spaces (Chinese, Japanese, Thai).
    shows = bool(unknown) or any(_is_unspaced(c) for c in question)
    if (share < params.rescue_foreign_share and shows) or (
        share < FOREIGN_KNOWN_SHARE and len(unknown) >= FOREIGN_FUNCTION_WORDS
    ):
        return "language"
    return "follow-up" if anchors else ""


def rewrite_may_carry(
    index: Vocabulary, params: RetrievalParams, anchors: Sequence[str], question: str
) -> bool:
    """Whether a rewritten question may carry the turn past the gate: the same guard as
    the composed channel, so a rewrite cannot drop the subject the reader brought. In the
    corpus's language, none of the question's own content words (beyond the earlier
    question's) may be unknown to the corpus; in another language, none of its unknown
    words may be written like a name or a term ("NTLM", "Prometheus")."""
    found = followup_terms(index, anchors, question, params.rescue_known_df)
    if found.known_share >= params.rescue_foreign_share:
        return len(found.unseen) <= params.rescue_unseen_terms
    names = name_terms(question)
    return not any(term in names for term in found.unseen)

