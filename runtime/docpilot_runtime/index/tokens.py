"""Token lists of unit fields, kept in this process by their text.

Under `mkdocs serve` one edit rebuilds the whole bundle, but only the edited page's
units change; tokenizing every unit's title, breadcrumb and text again was most of the
BM25 build. The build side asks here instead of calling ``tokenize`` directly, so a
rebuild tokenizes only text it has not seen. Keyed by the text itself, so an entry
cannot go stale: the same text always gives the same tokens. The pure-Python core
(``lexical``, ``tokenize``, which also run under Pyodide) knows nothing of this cache.
"""

from __future__ import annotations

from functools import lru_cache

from docpilot_runtime.retrieve.tokenize import tokenize


@lru_cache(maxsize=200_000)  # bounded: a long session cannot grow it without end
def cached_tokens(text: str) -> tuple[str, ...]:
    """``tokenize(text)``, from the cache when this process has tokenized ``text``
    (``cached_tokens.cache_info().misses`` counts the texts tokenized)."""
    return tuple(tokenize(text))
