"""Questions in the reader's language on an English site, with no model (issue 23, point 4).

The question's own language is read from its text (the page's ``lang`` is the site's);
example-site is built for real and asked in both modes the server has (hybrid, and
lexical, which is what static mode runs): a refusal is never without pages, says in the
reader's language that the docs are written in English, and leads pages found by no
shared word as a place to start."""

from __future__ import annotations

from pathlib import Path

import pytest
from corpora import ROOT
from docpilot_runtime.evaluate.questions import load_questions
from docpilot_runtime.evaluate.run import lexical_site
from docpilot_runtime.reply.results import ask_without_model
from docpilot_runtime.retrieve.site import Site
from docpilot_runtime.shared.framing import ENGLISH, FRAMINGS
from docpilot_runtime.shared.languages import question_language, same_language
from docpilot_runtime.shared.types import AskRequest
from docpilot_runtime.turn import load_runtime


@pytest.mark.parametrize(
    ("question", "language"),
    [
        ("Wie bringe ich `hatch publish` dazu, mein API-Token zu benutzen?", "de"),
        ("Comment désactiver la vérification du certificat ?", "fr"),
        ("¿headscale soporta autogroup?", "es"),
        ("Como faço para configurar o proxy?", "pt"),
        ("reactive の watch が呼ばれません", "ja"),
        ("`metrics_listen_addr`的`9090`没必要暴露出来吧", "zh"),
        ("프록시는 어떻게 설정하나요?", "ko"),
        # English with words other languages also use ("die", "was", "per", "come")
        ("Why does the worker die when the process was killed per request?", "en"),
        ("How do I come back to the default theme?", "en"),
        ("ERR_CONNECTION_FAILED - Port 443", ""),
    ],
)
def test_the_questions_language_is_read_from_its_own_words(question: str, language: str) -> None:
    assert question_language(question) == language


def test_language_tags_compare_by_their_primary_subtag() -> None:
    assert same_language("pt-BR", "pt") and same_language("en", "EN_us")
    assert not same_language("de", "en")
    assert same_language("", "de")  # nothing known: no claim that they differ


@pytest.fixture(scope="module", params=["hybrid", "lexical"])
def site(request: pytest.FixtureRequest, example_site: Path) -> Site:
    server = load_runtime(example_site).sites[0]
    assert server.mode == "hybrid"
    return server if request.param == "hybrid" else lexical_site(server)


def test_the_docs_language_is_read_from_the_docs(site: Site) -> None:
    assert site.docs_language == "en"


def test_a_german_question_is_refused_in_german_saying_the_docs_are_english(
    site: Site,
) -> None:
    de = FRAMINGS["de"]
    result = ask_without_model(
        site, AskRequest("Wie schließe ich eine Seite vom Assistenten aus?", lang="en")
    )
    assert result.kind == "refusal"
    assert de.english_docs in result.markdown
    assert de.refusal.partition("{site}")[2].split(",")[0] in result.markdown
    assert result.closest and ENGLISH.refusal.split("{site}")[1][:20] not in result.markdown


def test_a_question_sharing_no_word_with_the_docs_still_lists_pages(site: Site) -> None:
    ja = FRAMINGS["ja"]
    result = ask_without_model(site, AskRequest("このサイトの使い方を教えてください"))
    assert result.kind == "refusal"
    assert len(result.closest) >= 3 and ja.english_docs in result.markdown
    urls = [p.url for p in result.closest]
    assert len(set(urls)) == len(urls)
    if site.mode == "lexical":  # nothing matched: the site's first pages, led as such
        assert ja.start_here in result.markdown and urls[0] == site.bundle.pages[0].url


def test_an_english_question_on_the_english_site_gets_no_note(site: Site) -> None:
    result = ask_without_model(site, AskRequest("How should I prune an apple tree in winter?"))
    assert result.kind == "refusal" and result.closest
    assert not any(f.english_docs in result.markdown for f in FRAMINGS.values())


def test_the_page_language_still_wins_on_a_page_in_another_language(site: Site) -> None:
    # An English question on a Japanese page keeps the page's words, as before.
    ja = FRAMINGS["ja"]
    result = ask_without_model(site, AskRequest("How should I prune an apple tree?", lang="ja"))
    assert ja.refusal.partition("{site}")[2].strip()[:10] in result.markdown
    assert ja.english_docs not in result.markdown


def test_cognates_rank_beside_the_readers_own_words(site: Site) -> None:
    # "configuración" shares no token with the docs; its cognate does.
    question = "¿Cómo cambio la configuración del widget?"
    expanded = site.with_cognates(question)
    assert expanded.startswith(question) and len(expanded) > len(question)


def non_english_questions() -> list[str]:
    """Every question of the dev sets written in another language than English: the real
    threads' (multilingual/) and our translations (translated/), both halves."""
    devsets = ROOT / "benchmarks" / "devsets"
    questions = []
    for path in sorted(
        [*devsets.glob("translated/*/*.jsonl"), *devsets.glob("multilingual/*/*.jsonl")]
    ):
        questions += [q.question for q in load_questions(path)]
    return [q for q in questions if question_language(q) not in ("en", "")]


def test_no_non_english_question_is_refused_without_closest_pages(site: Site) -> None:
    """Asked on example-site, which covers none of them (they are about other projects):
    the hardest case, most of their words match nothing, yet every refusal lists pages,
    in both modes."""
    questions = non_english_questions()
    assert len(questions) >= 50
    refused = 0
    for question in questions:
        result = ask_without_model(site, AskRequest(question))
        if result.kind == "refusal":
            refused += 1
            assert result.closest, question
    assert refused >= len(questions) // 2  # the check above ran on most of them
