"""The one tokenizer: used to build the BM25 index, to query it, and in the browser.

Pure Python (standard library only) so the same code runs under Pyodide. Rules:

* NFKC-normalise and case-fold, so "Ｆｕｌｌ" and "full", "Straße" and "strasse" meet.
* A token is a run of Unicode letters, digits and marks. Runs joined by ``-``, ``_``,
  ``.``, ``/`` or ``:`` with no space (``X-API-Key``, ``v2.1.0``, ``snake_case``,
  ``mkdocs.yml``) are kept whole *and* also yield their parts, so a reader who writes
  "api key" still meets a page that writes ``X-API-Key``.
* Scripts written without spaces (Han, Hiragana, Katakana, Hangul, Thai…) are cut into
  overlapping character bigrams, the usual dictionary-free choice for CJK search;
  a lone character stays a unigram.
* Single Latin letters carry no subject and are dropped; single digits are kept.
* Plain lowercase ASCII words get a light English suffix stemmer (plurals, -ing,
  -ed, -ation, a final -e), so "configure", "configuring", "configured" and
  "configuration" meet. It is deliberately small: it never touches compounds,
  identifiers or other scripts, and it never makes a word shorter than three letters.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# A "word" character: letters, marks and digits of any script (the \w class minus "_").
_WORD = r"[^\W_]"
# A compound: words joined by connector punctuation with no whitespace between.
_COMPOUND = re.compile(rf"{_WORD}+(?:[-_./:+#]{_WORD}+)*[+#]*")
_PART = re.compile(rf"{_WORD}+")

_MAX_TOKEN_CHARS = 64


def _is_unspaced_script(ch: str) -> bool:
    """True for characters of scripts that do not separate words with spaces."""
    code = ord(ch)
    return (
        0x2E80 <= code <= 0x9FFF  # CJK radicals, kana, CJK unified ideographs
        or 0xAC00 <= code <= 0xD7AF  # Hangul syllables
        or 0xF900 <= code <= 0xFAFF  # CJK compatibility ideographs
        or 0x20000 <= code <= 0x2FFFF  # CJK extension planes
        or 0x0E00 <= code <= 0x0EFF  # Thai, Lao
        or 0x1000 <= code <= 0x109F  # Myanmar
        or 0x1780 <= code <= 0x17FF  # Khmer
    )


_VOWELS = set("aeiouy")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Light English stemming of a lowercase ASCII word (see the module docstring)."""
    if len(word) < 4 or not word.isascii() or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith(("sses", "shes", "ches", "xes", "zes")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ations", "ation", "ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            base = word[: -len(suffix)]
            if not _VOWELS & set(base):
                break
            word = base
            if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
                word = word[:-1]  # running -> run, but install stays
            break
    if word.endswith("e") and len(word) > 4:
        word = word[:-1]
    return word


def normalize(text: str) -> str:
    """NFKC and case folding: the form every token is compared in."""
    return unicodedata.normalize("NFKC", text).casefold()


def _bigrams(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def _split_scripts(word: str) -> list[tuple[bool, str]]:
    """Cut a word into runs of spaced and unspaced scripts: "api密钥" -> api, 密钥."""
    runs: list[tuple[bool, str]] = []
    for ch in word:
        unspaced = _is_unspaced_script(ch)
        if runs and runs[-1][0] == unspaced:
            runs[-1] = (unspaced, runs[-1][1] + ch)
        else:
            runs.append((unspaced, ch))
    return runs


def _word_tokens(word: str) -> list[str]:
    out: list[str] = []
    for unspaced, run in _split_scripts(word):
        if unspaced:
            out.extend(_bigrams(run))
        elif len(run) > 1 or run.isdigit():
            out.append(stem(run[:_MAX_TOKEN_CHARS]))
    return out


def tokenize(text: str) -> list[str]:
    """Tokens of ``text`` in order, duplicates kept (BM25 needs term frequencies)."""
    tokens: list[str] = []
    for compound in _COMPOUND.findall(normalize(text)):
        if compound.isascii():
            # Fast path for the common case; same tokens as the general path below.
            if compound.isalnum():
                if len(compound) > 1 or compound.isdigit():
                    tokens.append(stem(compound[:_MAX_TOKEN_CHARS]))
                continue
            parts = _PART.findall(compound)
            if compound != parts[0]:
                tokens.append(compound[:_MAX_TOKEN_CHARS])
            tokens.extend(stem(p[:_MAX_TOKEN_CHARS]) for p in parts if len(p) > 1 or p.isdigit())
            continue
        parts = _PART.findall(compound)
        if compound != parts[0] and not any(_is_unspaced_script(c) for c in compound):
            tokens.append(compound[:_MAX_TOKEN_CHARS])
        for part in parts:
            tokens.extend(_word_tokens(part))
    return tokens


def query_terms(text: str) -> list[str]:
    """Distinct tokens of a question, in first-seen order."""
    return list(dict.fromkeys(tokenize(text)))


# English function words, as the tokenizer spells them. Dropped from the *query* only
# (the index keeps every token, so the stored bundle does not change): in a reader's
# question they match nearly every section and, summed over a long question, outvote
# its subject words; on the dev sets' tune halves dropping them gained page recall@1
# and @5 (benchmarks/README.md, "Retrieval on real questions"). English only: the other
# languages' questions are too few to measure a list on.
_FUNCTION_WORDS = """
a an and are as at be but by for if in into is it no not of on or such that the their
then there these they this to was will with i me my we our you your he she him her its
what which who whom when where why how do does did doing done have has had having can
could should would am been being get got so than too very just also any all some about
from up out over again more most other only own same don now here
"""
FUNCTION_WORDS = frozenset(tokenize(_FUNCTION_WORDS))


def _is_compound(token: str) -> bool:
    """A token joined from two or more word parts: ``httpx.post``, ``x-api-key``. A
    version or other numbered compound (``v2.1.0``, ``python3.11``) does not count: its
    parts ("1", "0") are too common to stand in for it."""
    parts = _PART.findall(token)
    return len(parts) > 1 and not any(p.isdigit() for p in parts)


def search_term_counts(text: str, compounds: bool = False) -> dict[str, int]:
    """The terms a question is searched with, each with how often the question uses it
    (first-seen order): its tokens minus function words and minus whole word compounds.

    A compound is searched through its parts, which the index also holds: searching
    ``httpx.post`` beside ``httpx`` and ``post`` voted three times for one word of the
    question, and on the dev sets' tune halves dropping the compound gained page
    recall@1 (benchmarks/README.md, "Retrieval on real questions"). The index keeps
    compounds (the gate reads them, through ``query_terms``); ``compounds=True`` searches
    them too (``RetrievalParams.search_compounds``). The counts feed the
    query-term-frequency weight (``lexical.query_tf_weight``): a word the reader repeats
    ("proxies … proxy … a proxy") is what the question is about."""
    counts: dict[str, int] = {}
    for token in tokenize(text):
        if token in FUNCTION_WORDS or (not compounds and _is_compound(token)):
            continue
        counts[token] = counts.get(token, 0) + 1
    return counts


def search_terms(text: str) -> list[str]:
    """The distinct terms a question is searched with (``search_term_counts``' keys)."""
    return list(search_term_counts(text))
