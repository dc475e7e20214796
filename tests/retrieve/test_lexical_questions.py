"""The lexical channel on real questions: what benchmarks/bench_lexical.py measured, pinned
as behaviour on the uvicorn and httpx corpora's tune halves (built for real, ``embedder:
none``).

Before the query-side function words, the rarest-terms cap and the release-notes prior,
a reader's question about the access logger's format, with the log lines they pasted,
found the release-notes page first: it mentions every setting once. Before compounds were
searched through their parts and repeated words weighed more, an httpx reader asking how
to replace ``proxies`` with ``proxy`` found the proxies page only 12th."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest
from corpora import ROOT
from docpilot_runtime.bundle.schema import UnitRecord
from docpilot_runtime.evaluate.figures import ranked_pages
from docpilot_runtime.evaluate.questions import load_questions
from docpilot_runtime.retrieve.lexical import LexicalDoc, LexicalIndex, build_lexical, release_pages
from docpilot_runtime.retrieve.params import DEFAULT_PARAMS
from docpilot_runtime.retrieve.search import Searcher
from docpilot_runtime.retrieve.tokenize import FUNCTION_WORDS, search_terms
from docpilot_runtime.shared.types import AskRequest
from docpilot_runtime.turn import load_runtime
from shared_builds import SiteBuilds, reduced_site

CORPORA = ROOT / "benchmarks" / "corpora"
DEVSETS = ROOT / "benchmarks" / "devsets"


@pytest.fixture(scope="module")
def uvicorn_site(site_builds: SiteBuilds) -> Path:
    return reduced_site(site_builds, CORPORA / "uvicorn", {"embedder": "none"})


@pytest.fixture(scope="module")
def httpx_site(site_builds: SiteBuilds) -> Path:
    return reduced_site(site_builds, CORPORA / "httpx", {"embedder": "none"})


def _question(start: str, corpus: str = "uvicorn") -> tuple[str, str, tuple[str, ...]]:
    tune = DEVSETS / corpus / "tune.jsonl"
    for q in load_questions(tune):
        if q.question.startswith(start):
            return q.question, q.context, q.expect_pages
    raise AssertionError(f"{tune}: no question starting {start!r}")


def test_a_question_with_pasted_log_lines_finds_its_page_not_the_release_notes(
    uvicorn_site: Path,
) -> None:
    question, context, expect = _question("Question : patching uvicorn.access logger format")
    assert len(context) > 20  # the pasted part is what this test is about
    runtime = load_runtime(uvicorn_site)
    for text in (question, f"{question}\n\n{context}"):
        result = asyncio.run(runtime.ask(AskRequest(question=text)))
        pages = ranked_pages(result.to_dict()["ranked"])
        assert pages[0] in expect, pages[:3]
        assert "/release-notes/" in pages  # still found, just not first


def test_a_question_that_repeats_its_subject_finds_that_page_in_the_top_five(
    httpx_site: Path,
) -> None:
    question, _, expect = _question("Replace proxies usage with proxy", "httpx")
    runtime = load_runtime(httpx_site)
    result = asyncio.run(runtime.ask(AskRequest(question=question)))
    pages = ranked_pages(result.to_dict()["ranked"])
    assert set(pages[:5]) & set(expect), pages[:12]


def test_release_pages_are_read_from_version_headings_and_breadcrumbs() -> None:
    units = [
        ("Release Notes", ("Release Notes",), 0),
        ("Fixed", ("Release Notes", "0.35.0 (June 28, 2025)"), 0),
        ("Added", ("Release Notes", "0.34.3 (June 1, 2025)"), 0),
        ("Changed", ("Release Notes", "0.34.2"), 0),
        ("Settings", ("Settings",), 1),
        ("Python 3.12 support", ("Settings",), 1),
        ("2024-03-05", ("Blog",), 2),  # one dated unit alone is not a release page
    ]
    assert release_pages(units) == frozenset({0})


def test_function_words_leave_the_query_but_not_the_subject() -> None:
    assert search_terms("How do I set a timeout on the AsyncClient?") == [
        "set",
        "timeout",
        "asyncclient",
    ]
    assert search_terms("what is this and how does it work") == ["work"]
    assert {"the", "how", "is"} <= FUNCTION_WORDS


def test_long_questions_keep_their_rarest_terms(uvicorn_site: Path) -> None:
    site = load_runtime(uvicorn_site).sites[0]
    searcher = Searcher(site.searcher.lexical, params=replace(DEFAULT_PARAMS, query_term_cap=3))
    text = "uvicorn server request response proxy headers forwarded allow ips"
    terms = list(searcher.terms(text))
    df = site.searcher.lexical.document_frequency
    assert len(terms) == 3
    dropped = [t for t in search_terms(text) if t not in terms and df(t) > 0]
    assert dropped
    assert max(df(t) for t in terms) <= min(df(t) for t in dropped)
    assert all(df(t) > 0 for t in terms)  # a word the docs never use cannot take a place
    assert terms == [t for t in search_terms(text) if t in terms]  # question order kept


def test_page_support_lifts_the_page_with_several_matching_sections() -> None:
    docs = [
        LexicalDoc("A", "A", "timeout"),
        LexicalDoc("B", "B", "timeout other"),
        LexicalDoc("C", "B", "timeout other"),
        LexicalDoc("D", "D", "nothing here at all"),
    ]
    pages = (0, 1, 1, 2)
    units = [
        UnitRecord(f"u{i}", f"/p{p}/", d.title, (d.breadcrumb,), d.text, p)
        for i, (d, p) in enumerate(zip(docs, pages, strict=True))
    ]
    index = LexicalIndex(build_lexical(docs))
    raw = index.search(["timeout"])
    assert [u for u, _ in raw] == [0, 1, 2]  # one short section on its own page wins alone
    ranked = Searcher(index, units=units).rescore(raw)
    assert [u for u, _ in ranked] == [1, 2, 0]  # its page has two matching sections
    assert ranked[0][1] == pytest.approx(raw[1][1] * (1 + DEFAULT_PARAMS.page_support))
