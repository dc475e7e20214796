"""Token lists of unit fields, kept in this process by their text.

Under `mkdocs serve` one edit rebuilds the whole bundle, but only the edited page's
units change; tokenizing every unit's title, breadcrumb and text again was most of the
BM25 build. The build side asks here instead of calling ``tokenize`` directly, so a
rebuild tokenizes only text it has not seen. Keyed by the text itself, so an entry
cannot go stale: the same text always gives the same tokens. The pure-Python core
(``lexical``, ``tokenize``, which also run under Pyodide) knows nothing of this cache.
"""

from __future__ import annotations

from ..tokenize import tokenize

# Token lists by the text they came from. Bounded so a long session cannot grow it
# without end: the oldest entry goes first.
_TOKENS: dict[str, tuple[str, ...]] = {}
_TOKENS_MAX = 200_000


class Stats:
    """How many texts this process has tokenized (cache misses) and served from the
    cache (hits); tests read it to see what a rebuild tokenized."""

    tokenized = 0
    cached = 0


def cached_tokens(text: str) -> tuple[str, ...]:
    """``tokenize(text)``, from the cache when this process has tokenized ``text``."""
    hit = _TOKENS.get(text)
    if hit is not None:
        Stats.cached += 1
        return hit
    tokens = tuple(tokenize(text))
    Stats.tokenized += 1
    if len(_TOKENS) >= _TOKENS_MAX:
        del _TOKENS[next(iter(_TOKENS))]
    _TOKENS[text] = tokens
    return tokens
