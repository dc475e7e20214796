"""Question rewriting before retrieval (seed 003's first step; issue 22)."""

from __future__ import annotations

import time

from docpilot_runtime.retrieve.site import Site
from docpilot_runtime.settings.answer import AnswerSettings
from docpilot_runtime.shared.types import AskRequest, HistoryItem
from model_turns import provider_settings, run
from servers.anthropic_messages import Fault, Reply, answer_reply
from servers.openai_chat import OpenAIChatServer

EARLIER = HistoryItem(
    question="How do I exclude a page from the assistant?",
    kind="answer",
    markdown="Add `docpilot: {exclude: true}` to the page's front matter.",
)



def rewrite_prompt(body: dict[str, object]) -> bool:
    return "standalone search question" in str(body["messages"])


def test_a_plain_question_in_the_docs_language_costs_no_extra_call(site: Site) -> None:
    with OpenAIChatServer([Reply(text="NOT COVERED")]) as server:
        run(site, [provider_settings("openai", server)], AskRequest(EARLIER.question))
        assert len(server.requests) == 1 and not rewrite_prompt(server.bodies[0])


def test_a_follow_up_is_rewritten_for_search_and_answered_in_the_readers_words(
    site: Site,
) -> None:
    follow_up = "and how do I include it again?"
    rewritten = "How do I include an excluded page in the assistant again?"
    request = AskRequest(follow_up, history=(EARLIER,))
    with OpenAIChatServer() as server:
        server.script(Reply(text=rewritten, input_tokens=50, output_tokens=12))
        server.script(answer_reply(markdown="It was already excluded [1]."))
        result, _ = run(site, [provider_settings("openai", server)], request)
        rewrite, answer = server.bodies
    assert rewrite_prompt(rewrite) and follow_up in str(rewrite["messages"])
    assert EARLIER.question in str(rewrite["messages"]), "the earlier question gives context"
    # The reader's words are what the model answers; the rewrite is never shown to it.
    assert follow_up in str(answer["messages"]) and rewritten not in str(answer["messages"])
    assert result.usage is not None
    assert next(a["outcome"] for a in result.usage["attempts"]) == "rewrite"
    assert result.usage["input_tokens"] >= 50, "the rewrite call is counted"


def test_a_question_in_another_language_is_rewritten(site: Site) -> None:
    question = "¿Cómo excluyo una página del asistente?"
    with OpenAIChatServer() as server:
        server.script(Reply(text="How do I exclude a page from the assistant?"))
        server.script(Reply(text="NOT COVERED"))
        result, _ = run(site, [provider_settings("openai", server)], AskRequest(question))
        first = server.bodies[0]
    assert rewrite_prompt(first) and "English" in str(first["messages"])
    assert result.confidence is not None and result.kind != "passages"


def test_a_rewrite_cannot_carry_a_subject_the_docs_never_name(site: Site) -> None:
    # The model "rewrites" away the new subject: the guard of the composed channel holds.
    request = AskRequest("and does it work with Confluence?", history=(EARLIER,))
    with OpenAIChatServer([Reply(text=EARLIER.question)]) as server:
        result, _ = run(site, [provider_settings("openai", server)], request)
    assert result.kind == "refusal" and len(server.requests) == 1
    assert result.usage is not None, "the rewrite call still counts"


def test_a_stalled_rewrite_is_abandoned_within_its_share_of_the_deadline(site: Site) -> None:
    request = AskRequest("and how do I include it again?", history=(EARLIER,))
    with OpenAIChatServer([Fault("stall", seconds=5)]) as server:
        server.script(Reply(text="NOT COVERED"))
        began = time.monotonic()
        result, _ = run(
            site,
            [provider_settings("openai", server, retries=0)],
            request,
            AnswerSettings(turn_deadline=1.5),
        )
        took = time.monotonic() - began
        asked = len(server.requests)
    # A third of the deadline for the rewrite, then the answer is still asked.
    assert asked == 2 and result.fallback_reason == "uncited"
    assert took < 4.0


def test_rewriting_can_be_turned_off(site: Site) -> None:
    request = AskRequest("¿Cómo excluyo una página del asistente?")
    with OpenAIChatServer([Reply(text="NOT COVERED")] * 2) as server:
        run(site, [provider_settings("openai", server)], request, AnswerSettings(rewrite=False))
        assert not any(rewrite_prompt(b) for b in server.bodies)
