"""The support check: an answer that cites nothing inline is shown only when the excerpts
hold its content (check/support.py states the rule; issue 22)."""

from __future__ import annotations

import pytest
from docpilot_runtime.check.support import (
    Excerpt,
    attach,
    claims,
    judge,
    reattach,
    supports,
    unfounded,
    verify,
)

SERVE = Excerpt(
    "/reference/cli/#serve",
    "CLI > docpilot serve\nRun `docpilot serve site/` to serve the built site on "
    "http://127.0.0.1:8000 by default; `--port` picks another port.",
)
LIMITS = Excerpt(
    "/reference/runtime-settings/#limits",
    "Runtime settings > [limits]\n`daily_spend_micro_usd` caps the model spend per UTC day, "
    "in micro-USD (1,000,000 = 1 USD); 0 means no cap.",
)
EXCERPTS = [SERVE, LIMITS]


def test_a_restated_fact_is_cited_to_the_excerpt_that_holds_it() -> None:
    answer = attach("The default port of docpilot serve is 8000.", EXCERPTS, "Which port?")
    assert answer.markdown == "The default port of docpilot serve is 8000 [[/reference/cli/#serve]]."


def test_an_invented_price_is_not_supported_whatever_id_is_listed() -> None:
    answer = attach("The hosted plan costs $14 a month.", [SERVE, LIMITS], "What does it cost?")
    assert answer.markdown is None
    assert answer.unsupported[0].why == "the number $14 is in no excerpt"


@pytest.mark.parametrize(
    ("number", "held"),
    [("8000", True), ("800", False), ("80000", False), ("1,000,000", True), ("1000000", True)],
)
def test_numbers_are_found_as_written_not_inside_longer_numbers(number: str, held: bool) -> None:
    text = f"The value is {number} for docpilot serve."
    assert (supports(SERVE.text + " " + LIMITS.text, text) is not None) is held


def test_names_must_occur_as_words_in_the_excerpt() -> None:
    assert supports(SERVE.text, "Use `--port` with docpilot serve to pick a port.") is not None
    # "Docker" and "Google Analytics" are names no excerpt carries.
    assert supports(SERVE.text, "Run docpilot serve inside Docker on the default port.") is None
    assert supports(SERVE.text, "Send the served events to Google Analytics.") is None
    # A name is a word, not a substring: "serv" is not in the excerpt as a word.
    assert supports(SERVE.text, "The `serv` command serves the site.") is None


def test_words_come_from_the_excerpt_or_the_question_and_one_from_the_excerpt() -> None:
    question = "How do I change the listening port of the server?"
    assert supports(SERVE.text, "Change the listening port with --port.", question) is not None
    assert supports(SERVE.text, "Change the listening port.", "") is None
    assert supports(LIMITS.text, "The listening server port changes.", question) is None


def test_a_sentence_that_claims_nothing_needs_no_support_but_cannot_stand_alone() -> None:
    assert not claims("I hope this helps!") and not claims("It is somewhere, I think.")
    assert attach("I hope this helps!", EXCERPTS).markdown is None, "nothing to cite"
    answer = attach("It serves on 8000 by default with docpilot serve. I hope this helps!",
                    EXCERPTS)
    assert answer.markdown == (
        "It serves on 8000 by default with docpilot serve [[/reference/cli/#serve]]. "
        "I hope this helps!"
    )


def test_each_sentence_and_item_is_attached_to_its_own_excerpt() -> None:
    markdown = (
        "Two settings matter:\n\n"
        "- docpilot serve listens on 8000 by default.\n"
        "- `daily_spend_micro_usd` caps the model spend per day; 0 means no cap.\n"
    )
    answer = attach(markdown, EXCERPTS, "What limits a deployment?")
    assert answer.markdown == (
        "Two settings matter:\n\n"
        "- docpilot serve listens on 8000 by default [[/reference/cli/#serve]].\n"
        "- `daily_spend_micro_usd` caps the model spend per day; 0 means no cap "
        "[[/reference/runtime-settings/#limits]].\n"
    )


def test_one_unsupported_claim_sinks_the_whole_answer() -> None:
    answer = attach(
        "docpilot serve listens on 8000 by default. It also needs Redis 7.", EXCERPTS
    )
    assert answer.markdown is None
    assert [v.text for v in answer.unsupported] == ["It also needs Redis 7."]


def test_a_code_block_must_be_in_one_excerpt_and_gets_no_marker() -> None:
    held = "Run it:\n\n```bash\ndocpilot serve site/ --port 8000\n```\n\nIt serves docpilot on 8000."
    assert attach(held, EXCERPTS).markdown is not None
    invented = "Run it:\n\n```bash\ndocpilot serve site/ --workers 4\n```"
    assert attach(invented, EXCERPTS).markdown is None


def test_a_german_sentence_capitalises_nouns_without_naming_anything() -> None:
    # The capitals of a German sentence are nouns: only words and numbers are read.
    verdict = judge("Der Server läuft mit docpilot serve auf dem Port 8000.", EXCERPTS)
    assert verdict[0].claims and "name" not in verdict[0].why


def test_a_claim_citing_the_wrong_excerpt_is_re_attached_to_the_one_holding_it() -> None:
    # Issue 22: the port question cited the excerpt about `exclude`.
    markdown = (
        "`daily_spend_micro_usd` caps the model spend per day [1]. "
        "docpilot serve listens on 8000 by default [1]."
    )
    mended = reattach(markdown, {1: LIMITS.id}, EXCERPTS, "What are the defaults?")
    assert mended == (
        "`daily_spend_micro_usd` caps the model spend per day [[/reference/runtime-settings/#limits]]. "
        "docpilot serve listens on 8000 by default [[/reference/cli/#serve]]."
    )


def test_claims_already_held_or_held_by_no_excerpt_keep_their_citations() -> None:
    held = "docpilot serve listens on 8000 by default [1]."
    assert reattach(held, {1: SERVE.id}, EXCERPTS) is None
    nowhere = "It also needs Redis 7 [1]."
    assert reattach(nowhere, {1: SERVE.id}, EXCERPTS) is None


def test_an_inline_citation_does_not_vouch_for_names_and_numbers_no_excerpt_holds() -> None:
    assert unfounded("The capital of Australia is Canberra [1].", EXCERPTS) == "Australia"
    assert unfounded("It listens on 9000 [1].", EXCERPTS) == "9000"
    # Names and numbers do not depend on the answer's language.
    assert unfounded("Le port par défaut de docpilot serve est 8000 [1].", EXCERPTS) == ""


def test_numbers_and_names_from_the_excerpt_count_as_its_evidence() -> None:
    # Every word from the question, the number from the excerpt: held.
    question = "What is the default port?"
    assert supports(SERVE.text, "The default port is 8000.", question) is not None


def test_verify_holds_every_cited_claim_to_an_excerpt_and_moves_it_there() -> None:
    markdown = "docpilot serve listens on 8000 by default [2]. It also needs Redis 7 [1]."
    withheld = verify(markdown, {1: SERVE.id, 2: LIMITS.id}, EXCERPTS)
    assert withheld.markdown is None and "7" in withheld.why
    moved = verify("docpilot serve listens on 8000 by default [2].", {2: LIMITS.id}, EXCERPTS)
    assert moved.moved and moved.markdown == (
        "docpilot serve listens on 8000 by default [[/reference/cli/#serve]]."
    )


def test_verify_reads_another_language_by_its_numbers_and_names_only() -> None:
    french = "Par défaut, docpilot serve écoute sur le port 8000 [1]."
    kept = verify(french, {1: SERVE.id}, EXCERPTS)
    assert kept.markdown == "Par défaut, docpilot serve écoute sur le port 8000 [[/reference/cli/#serve]]."
    invented = verify("Il faut aussi Redis avec le port 6379 [1].", {1: SERVE.id}, EXCERPTS)
    assert invented.markdown is None
