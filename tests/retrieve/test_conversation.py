"""The composed channel rescues only what depends on the conversation (issue 9, point 1).

Real turns on the real example-site bundle (hybrid, default embedder) and on the same
bundle in lexical mode (what static mode runs): an uncovered question asked after a
covered turn stays refused; an elliptical follow-up still passes on the composed question.
None of these questions is a calibration probe (or a variant of one) or a dev-set
question; each uncovered one was carried past the gate in hybrid mode before the rule.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from corpora import ROOT
from docpilot_runtime.evaluate.questions import EvalMode, load_questions
from docpilot_runtime.evaluate.run import evaluate, evaluation_runtime
from docpilot_runtime.reply.results import ask_without_model
from docpilot_runtime.retrieve.followup import (
    fold,
    followup_terms,
    function_words,
    name_terms,
    noun_capitalising,
)
from docpilot_runtime.retrieve.tokenize import query_terms
from docpilot_runtime.shared.types import AskRequest, HistoryItem
from docpilot_runtime.turn import Runtime

PROXY = "How do I run the runtime behind a reverse proxy?"
CONTAINER = "How do I deploy the runtime in a container?"
STATIC = "How do I turn on static mode?"
TOOLS = ROOT / "tools" / "function_words"


@pytest.fixture(scope="module", params=["bundle", "lexical"])
def runtime(request: pytest.FixtureRequest, example_site: Path) -> Runtime:
    mode: EvalMode = request.param
    return evaluation_runtime(example_site, mode)


def turn(runtime: Runtime, question: str, earlier: str | None = None) -> dict[str, object]:
    history = () if earlier is None else (HistoryItem(question=earlier, kind="answer"),)
    result = ask_without_model(runtime.sites[0], AskRequest(question=question, history=history))
    return result.to_dict()


@pytest.mark.parametrize(
    ("earlier", "question"),
    [
        (PROXY, "What's a good recipe for banana bread?"),
        (PROXY, "Who composed the Moonlight Sonata?"),
        (CONTAINER, "Who composed the Moonlight Sonata?"),
        (CONTAINER, "what is the weather in Paris tomorrow?"),
        (PROXY, "what is the weather in Paris tomorrow?"),
    ],
)
def test_uncovered_question_after_a_covered_turn_is_refused(
    runtime: Runtime, earlier: str, question: str
) -> None:
    assert turn(runtime, question)["kind"] == "refusal"  # refused alone ...
    after = turn(runtime, question, earlier)
    assert after["kind"] == "refusal", after  # ... and after a covered turn
    assert after["rescued"] is False


def test_elliptical_follow_up_still_passes_on_the_composed_question(runtime: Runtime) -> None:
    after = turn(runtime, "and how do I turn it off?", STATIC)
    assert after["kind"] == "passages"


def test_elliptical_follow_up_refused_alone_is_rescued_in_hybrid_mode(example_site: Path) -> None:
    runtime = evaluation_runtime(example_site, "bundle")
    question = "and how do I include it again?"
    assert turn(runtime, question)["kind"] == "refusal"
    after = turn(runtime, question, "How do I exclude a page from the assistant?")
    assert after["kind"] == "passages" and after["rescued"] is True


def test_follow_up_in_another_language_is_rescued_in_the_corpus_words(runtime: Runtime) -> None:
    """Most of its words are unknown to the English corpus, but those it shares with it
    ("cors", "origins") are about the earlier turn's sections: it passes, composed in
    those corpus words. Static mode's gate (the known share of its words and its names)
    passes it alone already: there it passes unrescued, ranked by the conversation."""
    question = "und wie konfiguriere ich dabei die CORS-Origins?"
    hybrid = runtime.sites[0].mode == "hybrid"
    assert turn(runtime, question)["kind"] == ("refusal" if hybrid else "passages")
    site = runtime.sites[0]
    found = followup_terms(site.searcher.lexical, [PROXY], question)
    assert found.unseen and found.known_share < site.params.rescue_foreign_share
    composed = site.rescue_question([PROXY], question)
    assert composed is not None and composed.startswith(PROXY)
    assert question not in composed  # the follow-up's own words are replaced by the corpus's
    after = turn(runtime, question, PROXY)
    assert after["kind"] == "passages" and after["rescued"] is hybrid


@pytest.mark.parametrize(
    ("earlier", "question"),
    [
        (PROXY, "¿y cómo configuro los orígenes CORS?"),  # "configuro" ~ "configure"
        # Not "et avec quelles variables d'environnement ?" after CONTAINER any more: since
        # the webhooks guide quotes `os.environ`, "environ" is that word's cognate and lies
        # outside the composed question's best units, so the rule refuses it (a known
        # weakness, benchmarks/docs/bench_conversation.md).
    ],
)
def test_follow_up_in_another_language_matched_by_cognates_is_rescued_in_hybrid_mode(
    example_site: Path, earlier: str, question: str
) -> None:
    runtime = evaluation_runtime(example_site, "bundle")
    assert turn(runtime, question)["kind"] == "refusal"
    after = turn(runtime, question, earlier)
    assert after["kind"] == "passages" and after["rescued"] is True


@pytest.mark.parametrize(
    ("earlier", "question"),
    [
        (PROXY, "et quelle est la recette de la tarte aux pommes ?"),
        (CONTAINER, "wer hat die Mondscheinsonate komponiert?"),
        (CONTAINER, "¿y puedo pagar la factura con tarjeta de crédito?"),
    ],
)
def test_uncovered_question_in_another_language_stays_refused_after_a_covered_turn(
    runtime: Runtime, earlier: str, question: str
) -> None:
    assert turn(runtime, question)["kind"] == "refusal"
    assert runtime.sites[0].rescue_question([earlier], question) is None
    after = turn(runtime, question, earlier)
    assert after["kind"] == "refusal" and after["rescued"] is False


def test_words_written_like_names_are_found_in_any_language_but_german_nouns_are_not() -> None:
    assert name_terms("¿y puedo autenticarme con NTLM?") == {"ntlm"}
    assert name_terms("et est-ce compatible avec Keycloak ?") == {"keycloak"}
    assert name_terms("wer hat die WM 2014 gewonnen?") == {"wm", "2014"}
    assert name_terms("Et comment je le désactive ?") == set()  # the first word
    # German capitalises every noun: a capital there is no sign of a name.
    assert name_terms("und wie schließe ich bestimmte Ordner davon aus?") == set()
    assert "und" in noun_capitalising() and "les" not in noun_capitalising()


def test_follow_up_in_another_language_naming_an_unknown_thing_stays_refused(
    runtime: Runtime,
) -> None:
    """Its corpus words ("cors", "origins") are the earlier turn's, as in the rescued
    "¿y cómo configuro los orígenes CORS?", but it names a product the corpus never does."""
    question = "¿y cómo configuro los orígenes CORS para Keycloak?"
    assert runtime.sites[0].rescue_question([PROXY], question) is None
    after = turn(runtime, question, PROXY)
    assert after["kind"] == "refusal" and after["rescued"] is False


def test_function_words_of_many_languages_are_set_aside_as_the_tokenizer_spells_them() -> None:
    """The shipped file holds the package's lists as the current tokenizer spells them
    (re-run tools/function_words/make_function_words.py --lists when this fails)."""
    lists = json.loads((TOOLS / "stop_words.json").read_text(encoding="utf-8"))
    assert len(lists["languages"]) >= 30 and "BSD" in lists["source"]
    spelled = {t for listed in lists["languages"].values() for w in listed for t in query_terms(w)}
    words = function_words()
    assert words == spelled
    assert {"the", "und", "les", "cómo", "para"} <= words
    assert not {"proxy", "certificat", "cooki"} & words


def test_cognates_fold_accents_and_share_all_but_one_letter_of_the_corpus_word(
    runtime: Runtime,
) -> None:
    cognates = runtime.sites[0].cognates
    assert fold("système") == "systeme"
    assert cognates.of("statique") == "static"
    assert cognates.of("incluirla") == "includ"
    assert cognates.of("configuro") == "configur"
    assert cognates.of("bananenbrot") is None
    assert cognates.of("ab") is None  # too short to tell a cognate from chance


DEVSET = ROOT / "benchmarks" / "devsets" / "example-site"


def test_example_site_test_half_no_uncovered_question_is_carried_by_a_covered_turn(
    runtime: Runtime,
) -> None:
    """The done-when figure on one small test half: at most one uncovered question refused
    alone is carried past the gate by a covered turn (issue 9's goal, ≤ 1); elliptical ones
    keep page recall@5 with their history. example-site is its own corpus: since its
    runtime-settings page lists the analytics collection endpoints a page policy needs, a
    follow-up asking to send chat events to Google Analytics shares those words and is
    carried (one question, in both modes)."""
    questions = load_questions(DEVSET / "test.jsonl")
    unrelated = [q for q in questions if q.kind == "followup_unrelated"]
    with_history = evaluate(runtime, unrelated).outcomes
    alone = evaluate(runtime, [dataclasses.replace(q, history=()) for q in unrelated]).outcomes
    carried = [
        h.question for a, h in zip(alone, with_history, strict=True) if h.answered and not a.answered
    ]
    assert len(carried) <= 1, carried
    elliptical = [q for q in questions if q.kind == "followup_elliptical"]
    r5 = evaluate(runtime, elliptical).kinds["followup_elliptical"].recall_at_5
    bare = [dataclasses.replace(q, history=()) for q in elliptical]
    r5_alone = evaluate(runtime, bare).kinds["followup_elliptical"].recall_at_5
    assert r5 is not None and r5_alone is not None and r5 >= r5_alone


@pytest.mark.parametrize(
    ("earlier", "question", "pages"),
    [
        # A reader trial's "and how do I turn it off?" passed the gate on its own and
        # quoted the model providers' page.
        ("How do I keep past conversations in the widget?", "and how do I turn it off?",
         ("/guides/customising-the-widget/",)),
        ("How do I show suggested questions in the widget?", "and how many can I add?",
         ("/guides/customising-the-widget/", "/reference/plugin-configuration/")),
    ],
)
def test_a_bare_follow_up_is_ranked_by_the_conversation(
    runtime: Runtime, earlier: str, question: str, pages: tuple[str, ...]
) -> None:
    """Alone it must not quote the page the conversation is about (it may be refused:
    then the conversation rescues it); after the earlier turn it leads with that page."""
    alone = turn(runtime, question)
    after = turn(runtime, question, earlier)
    assert after["kind"] == "passages"
    assert after["citations"][0]["url"].startswith(pages)  # type: ignore[index]
    assert not alone["citations"] or not alone["citations"][0]["url"].startswith(pages)  # type: ignore[index]
