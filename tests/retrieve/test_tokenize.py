"""The one tokenizer, used to build the BM25+ index and at query time (server and browser).

Pure Python: this file also runs under Pyodide (``tools/pyodide/run-tests.mjs``).
"""

from __future__ import annotations

from docpilot_runtime.retrieve.tokenize import (
    query_terms,
    search_term_counts,
    search_terms,
    stem,
    tokenize,
)


def test_compounds_are_kept_whole_and_split_into_parts() -> None:
    tokens = tokenize("Send X-API-Key to v2.1.0 in mkdocs.yml")
    assert {"x-api-key", "api", "key", "v2.1.0", "mkdocs.yml", "mkdoc", "yml"} <= set(tokens)


def test_width_and_case_variants_meet() -> None:
    assert tokenize("Ｆｕｌｌ STRASSE") == tokenize("full straße")


def test_unspaced_scripts_become_bigrams_and_single_latin_letters_drop() -> None:
    assert tokenize("快速入门") == ["快速", "速入", "入门"]
    assert tokenize("a b 7") == ["7"]


def test_light_stemmer_joins_inflections_but_keeps_short_words() -> None:
    assert {stem(w) for w in ("configure", "configuring", "configured", "configuration")} == {
        "configur"
    }
    assert stem("running") == "run" and stem("install") == "install" and stem("uses") == "use"
    assert query_terms("keys KEY key") == ["key"]


def test_a_question_searches_compounds_through_their_parts_and_counts_repeated_words() -> None:
    counts = search_term_counts("Replace proxies with proxy on httpx.post: a proxy now?")
    assert "httpx.post" not in counts  # the parts carry it: one word, one vote
    assert counts["httpx"] == counts["post"] == 1
    assert counts["proxy"] == 3  # "proxies", "proxy", "proxy": the subject
    assert "on" not in counts and "now" not in counts
    assert "httpx.post" in search_term_counts("httpx.post", compounds=True)
    assert "httpx.post" in query_terms("httpx.post")  # the gate still reads it
    # A numbered compound stays: its parts ("1", "0") would not stand in for it.
    assert "v2.1.0" in search_term_counts("what changed in v2.1.0")
    assert search_terms("set X-API-Key") == ["set", "api", "key"]
