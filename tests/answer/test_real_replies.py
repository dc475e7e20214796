"""What real small models and real servers send, scripted (issue 22), through real turns.

Each test pins a behaviour measured with Qwen2.5-Coder 0.5B/1.5B behind llama.cpp's
server: tool calls written as text, prose answers, `citations` listed without inline
markers, stray brackets, declines that cite, replies cut at max_tokens, a role-only
chunk before a long prompt is read, context overflow, a server started without
`--jinja`. What a reader sees must stay grounded in every case.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import pytest
from docpilot_runtime.retrieve.site import Site
from docpilot_runtime.settings.answer import AnswerSettings
from docpilot_runtime.shared.markdown_tree import text_of
from docpilot_runtime.shared.types import AskRequest
from model_turns import QUESTION, deltas, provider_settings, run
from servers.anthropic_messages import (
    AnthropicServer,
    Fault,
    Reply,
    ToolUse,
    answer_reply,
    text_call,
    tool_reply,
)
from servers.openai_chat import OpenAIChatServer

SERVERS = {"anthropic": AnthropicServer, "openai": OpenAIChatServer}




def first_sentence(site: Site, unit_id: str) -> str:
    """The opening sentence of a unit's text: a claim that excerpt certainly holds."""
    text = site.bundle.units[site.unit_rows[unit_id]].text
    return re.split(r"(?<=[.!?])\s", " ".join(text.split()), maxsplit=1)[0]



def compact(server: Any, **extra: Any) -> Any:
    return provider_settings("openai", server, profile="compact", **extra)


# --- tool calls written as text --------------------------------------------------------------


@pytest.mark.parametrize("form", ["fenced", "tagged", "bare"])
def test_an_answer_call_written_as_text_is_read_as_the_call(
    site: Site, primed: list[str], form: str
) -> None:
    # 6 of 19 calls in issue 22's trial: the server returned the call as content.
    call = text_call(
        "answer",
        {"markdown": f"Use front matter [[{primed[0]}]].", "citations": [primed[0]]},
        form,  # type: ignore[arg-type]
        before="Here is my answer:" if form == "fenced" else "",
    )
    with OpenAIChatServer([call], llama_cpp=True) as server:
        result, events = run(site, [provider_settings("openai", server)], AskRequest(QUESTION))
    assert result.kind == "answer" and result.markdown == "Use front matter [1]."
    assert [c.id for c in result.citations] == [primed[0]]
    shown = "".join(e.data["text"] for e in deltas(events))
    assert "name" not in shown and "{" not in shown and "tool_call" not in shown


def test_a_lookup_written_as_text_runs_and_is_replayed_as_a_call(
    site: Site, primed: list[str]
) -> None:
    with OpenAIChatServer(llama_cpp=True) as server:
        server.script(
            text_call("search_docs", {"query": "exclude pages"}),
            answer_reply(markdown=f"Excluded [[{primed[0]}]]."),
        )
        result, _ = run(site, [provider_settings("openai", server)], AskRequest(QUESTION))
        second = server.bodies[1]["messages"]
    assert result.kind == "answer"
    # The real API's checks passed: the call was replayed as tool_calls, answered by a tool
    # message, so the model sees its search results.
    assert second[-2]["role"] == "assistant" and second[-2]["tool_calls"][0]["function"][
        "name"
    ] == "search_docs"
    assert second[-1]["role"] == "tool" and "<excerpt" in second[-1]["content"]


# --- prose answers ---------------------------------------------------------------------------


def test_a_prose_answer_with_id_markers_is_a_cited_answer(
    site: Site, primed: list[str], kind: str
) -> None:
    # 13 of 19 calls answered in prose, several correct: no text-answer path existed.
    with SERVERS[kind]([Reply(text=f"Use front matter [[{primed[1]}]].")]) as server:
        result, _ = run(site, [provider_settings(kind, server)], AskRequest(QUESTION))
    assert result.kind == "answer" and result.markdown == "Use front matter [1]."
    assert result.checks is not None and result.checks["cited_by"] == "markers"
    assert not result.tentative


def test_a_compact_prose_answer_cites_numbered_excerpts_and_streams(
    site: Site, primed: list[str]
) -> None:
    # The excerpts' own sentences, so that every name and number is one they hold.
    unit = site.bundle.units[site.unit_rows[primed[0]]]
    sentences = re.split(r"(?<=[.!?])\s", " ".join(unit.text[:600].split()))[:-1]
    long = " ".join(f"{sentence.rstrip('.')} [1]." for sentence in sentences)
    text = f"{first_sentence(site, primed[1]).rstrip('.')} [2].\n\n{long}"
    with OpenAIChatServer([Reply(text=text)], llama_cpp=True, chunk_chars=5) as server:
        result, events = run(site, [compact(server)], AskRequest(QUESTION))
        first = server.bodies[0]
    assert result.kind == "answer"
    assert [c.id for c in result.citations] == [primed[1], primed[0]]
    shown = deltas(events)
    assert len(shown) >= 2 and shown[0].data["text"].startswith(text[:12])
    assert "".join(e.data["text"] for e in shown) == result.markdown
    # The compact prompt: a short system block, three numbered excerpts, no tools.
    assert "tools" not in first and len(first["messages"][0]["content"]) < 600
    user = first["messages"][1]["content"]
    assert user.count("\n[1] ") + user.count("\n[2] ") + user.count("\n[3] ") == 3


def test_a_decline_that_cites_is_no_answer_and_never_flashes_up(site: Site) -> None:
    # What the 0.5B model wrote for covered questions: "[1] NOT COVERED [2] NOT COVERED".
    text = "[1] NOT COVERED [2] NOT COVERED [3] NOT COVERED"
    with OpenAIChatServer([Reply(text=text)], llama_cpp=True) as server:
        result, events = run(site, [compact(server)], AskRequest(QUESTION))
    assert result.kind == "refusal" and result.fallback_reason == "uncited"
    assert not deltas(events)


@pytest.mark.parametrize(
    "text",
    ["[1] [2] [1] [2]", "Pages pages pages. " * 2 + "[1] the page the page the page " * 4],
    ids=["markers-only", "loop"],
)
def test_marker_only_and_looping_replies_are_no_answer(site: Site, text: str) -> None:
    with OpenAIChatServer([Reply(text=text)], llama_cpp=True) as server:
        result, _ = run(site, [compact(server)], AskRequest(QUESTION))
    assert result.kind == "passages" and result.fallback_reason == "models_failed"


def test_an_echo_of_the_rules_is_no_answer(site: Site, primed: list[str]) -> None:
    from docpilot_runtime.answer.prompt import PLATFORM_RULES

    echo = PLATFORM_RULES[:900] + f" [[{primed[0]}]]"
    with OpenAIChatServer([Reply(text=echo)], llama_cpp=True) as server:
        result, _ = run(site, [provider_settings("openai", server)], AskRequest(QUESTION))
    assert result.kind == "passages"
    assert result.usage is not None and "echoes" in result.usage["attempts"][0]["cause"]


# --- citations listed, no inline marker ------------------------------------------------------


def test_listed_ids_without_markers_attach_when_the_excerpt_holds_the_text(
    site: Site, primed: list[str], kind: str
) -> None:
    # Forced answer calls in issue 22 filled `citations` and never wrote a marker: the
    # covered question became a refusal. Now the content is checked against the excerpt.
    claim = first_sentence(site, primed[0])
    with SERVERS[kind]([answer_reply(markdown=claim, citations=[primed[0]])]) as server:
        result, events = run(site, [provider_settings(kind, server)], AskRequest(QUESTION))
    assert result.kind == "answer" and result.tentative
    assert [c.id for c in result.citations] == [primed[0]]
    assert result.markdown.endswith("[1].") or result.markdown.endswith("[1]")
    assert result.checks == {"cited_by": "check", "ids_stripped": [], "links_delinked": []}
    assert not deltas(events), "an answer checked whole is shown whole, in the final event"


def test_an_invented_answer_listing_a_valid_id_is_not_a_cited_answer(
    site: Site, primed: list[str], kind: str
) -> None:
    invented = "The hosted plan costs $14 a month."
    with SERVERS[kind]([answer_reply(markdown=invented, citations=[primed[0]])]) as server:
        result, events = run(site, [provider_settings(kind, server)], AskRequest(QUESTION))
    assert result.kind == "refusal" and not result.citations
    assert "$14" not in result.markdown and not deltas(events)
    assert result.fallback_reason == "uncited" and result.usage is not None
    assert "$14" in result.usage["attempts"][0]["cause"]


def test_prose_with_no_marker_is_attached_to_the_excerpt_holding_it(
    site: Site, primed: list[str]
) -> None:
    claim = first_sentence(site, primed[1])
    with OpenAIChatServer([Reply(text=claim)], llama_cpp=True) as server:
        result, _ = run(site, [compact(server)], AskRequest(QUESTION))
    assert result.kind == "answer" and result.tentative
    assert [c.id for c in result.citations] == [primed[1]]


def test_a_stray_bracket_around_a_listed_id_still_cites(
    site: Site, primed: list[str], kind: str
) -> None:
    markdown = f"Use front matter [[{primed[0]}] or a glob [{primed[1]}]]."
    with SERVERS[kind]([answer_reply(markdown=markdown, citations=primed[:2])]) as server:
        result, _ = run(site, [provider_settings(kind, server)], AskRequest(QUESTION))
    assert result.kind == "answer" and result.markdown == "Use front matter [1] or a glob [2]."


def test_a_structured_compact_reply_is_read_from_its_json(site: Site, primed: list[str]) -> None:
    reply = Reply(text=json.dumps({"answer": "Use front matter [2].", "sources": [2]}))
    with OpenAIChatServer([reply], llama_cpp=True) as server:
        result, _ = run(site, [compact(server, structured_output=True)], AskRequest(QUESTION))
        body = server.bodies[0]
    assert body["response_format"]["type"] == "json_schema"
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["required"] == ["answer", "sources"]
    assert result.kind == "answer" and [c.id for c in result.citations] == [primed[1]]


# --- the ladder ------------------------------------------------------------------------------


def test_an_uncited_answer_moves_to_the_next_rung(site: Site, primed: list[str]) -> None:
    with AnthropicServer() as first, OpenAIChatServer() as second:
        first.script(answer_reply(markdown="It is in the settings somewhere.", citations=[]))
        second.script(answer_reply(markdown=f"Front matter [[{primed[0]}]]."))
        result, _ = run(
            site,
            [provider_settings("anthropic", first), provider_settings("openai", second)],
            AskRequest(QUESTION),
        )
    assert result.kind == "answer" and result.usage is not None
    assert [(a["provider"], a["outcome"]) for a in result.usage["attempts"]] == [
        ("anthropic", "uncited"),
        ("openai", "answer"),
    ]
    # Both calls are counted: the first provider's tokens are not lost.
    assert result.usage["input_tokens"] == 240 and result.usage["steps"] == 2


def test_uncited_then_a_failure_is_a_refusal_within_the_deadline(site: Site) -> None:
    # 3 s: the first rung's scripted reply must fit in it on a loaded machine (1 s did not).
    with AnthropicServer() as first, OpenAIChatServer([Fault("stall", seconds=10)]) as second:
        first.script(answer_reply(markdown="Somewhere in the settings.", citations=[]))
        result, _ = run(
            site,
            [provider_settings("anthropic", first), provider_settings("openai", second)],
            AskRequest(QUESTION),
            AnswerSettings(turn_deadline=3.0),
        )
    assert result.kind == "refusal" and result.fallback_reason == "uncited"
    assert [a["outcome"] for a in (result.usage or {})["attempts"]] == ["uncited", "deadline"]


# --- cut replies, timeouts, context, servers -------------------------------------------------


def test_a_reply_cut_at_max_tokens_is_logged_and_not_used(
    site: Site, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    cut = Reply(tool_calls=(ToolUse("answer", raw='{"markdown": "Use front ma'),), cut=True)
    caplog.set_level(logging.WARNING, "docpilot")
    with SERVERS[kind]([cut]) as server:
        result, _ = run(site, [provider_settings(kind, server)], AskRequest(QUESTION))
    assert result.kind == "passages" and result.usage is not None
    assert result.usage["output_tokens"] == 40, "the cut call's tokens are counted"
    assert "cut at max_tokens" in caplog.text and "cut at max_tokens" in str(result.usage)


def test_a_cut_prose_answer_keeps_its_complete_sentences(site: Site, primed: list[str]) -> None:
    reply = Reply(text="Use front matter [2]. Or a glob in the plugin opti", cut=True)
    with OpenAIChatServer([reply], llama_cpp=True) as server:
        result, _ = run(site, [compact(server)], AskRequest(QUESTION))
    assert result.kind == "answer" and result.tentative
    assert result.markdown == "Use front matter [1]."


def test_a_role_only_first_chunk_does_not_satisfy_first_token_timeout(
    site: Site, primed: list[str]
) -> None:
    # The role chunk arrives at once; the model then reads the prompt for a second.
    slow = Reply(text=f"Late [[{primed[0]}]].", first_token_delay=1.0)
    with OpenAIChatServer([slow]) as server:
        settings = provider_settings("openai", server, first_token_timeout=0.3, retries=0)
        result, _ = run(site, [settings], AskRequest(QUESTION))
    assert result.kind == "passages"
    assert "first_token_timeout" in (result.usage or {})["attempts"][0]["cause"]


def test_llama_cpp_pings_keep_no_stream_alive_but_a_slow_model_within_time_answers(
    site: Site, primed: list[str]
) -> None:
    slow = Reply(text=f"Front matter [[{primed[0]}]].", first_token_delay=0.6)
    with OpenAIChatServer([slow, slow], llama_cpp=True, ping_interval=0.1) as server:
        quick = provider_settings("openai", server, first_token_timeout=0.3, retries=0)
        patient = provider_settings("openai", server, first_token_timeout=5.0)
        stalled, _ = run(site, [quick], AskRequest(QUESTION))
        answered, _ = run(site, [patient], AskRequest(QUESTION))
    assert stalled.kind == "passages" and answered.kind == "answer"


def test_context_overflow_is_tried_once_more_with_fewer_excerpts(
    site: Site, primed: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "docpilot")
    with OpenAIChatServer(llama_cpp=True) as probe:
        probe.script(answer_reply(markdown=f"Front matter [[{primed[0]}]]."))
        run(site, [provider_settings("openai", probe)], AskRequest(QUESTION))
        from servers.openai_chat import prompt_tokens

        six = prompt_tokens(probe.bodies[0])
    with OpenAIChatServer(llama_cpp=True, n_ctx=six - 1) as server:
        server.script(answer_reply(markdown=f"Front matter [[{primed[0]}]]."))
        result, _ = run(site, [provider_settings("openai", server)], AskRequest(QUESTION))
        sent = [json.dumps(b["messages"]).count("<excerpt ") for b in server.bodies]
    assert sent == [6, 3]
    assert result.kind == "answer"
    assert "does not fit the model's context" in caplog.text


def test_a_server_without_jinja_is_not_retried_and_says_what_helps(
    site: Site, primed: list[str]
) -> None:
    with OpenAIChatServer(llama_cpp=True, jinja=False) as server:
        server.script(Reply(text="Front matter [2]."))
        full, _ = run(site, [provider_settings("openai", server)], AskRequest(QUESTION))
        tried = len(server.requests)
        small, _ = run(site, [compact(server)], AskRequest(QUESTION))
    assert full.kind == "passages" and tried == 1, "a 500 that will repeat is not retried"
    cause = (full.usage or {})["attempts"][0]["cause"]
    assert "--jinja" in cause and 'profile = "compact"' in cause
    assert small.kind == "answer", "the compact profile sends no tools"


# --- what is sent ----------------------------------------------------------------------------


def test_request_settings_reach_the_server(site: Site, primed: list[str]) -> None:
    with OpenAIChatServer() as server:
        server.script(
            tool_reply("search_docs", {"query": "exclude"}),
            answer_reply(markdown=f"Front matter [[{primed[0]}]]."),
        )
        settings = provider_settings(
            "openai", server, temperature=0.0, tool_choice="answer_last", excerpts=2
        )
        result, _ = run(site, [settings], AskRequest(QUESTION), AnswerSettings(max_steps=2))
        first, last = server.bodies
    assert result.kind == "answer"
    assert first["temperature"] == 0.0 and first["tool_choice"] == "auto"
    assert len(first["tools"]) == 5
    assert [t["function"]["name"] for t in last["tools"]] == ["answer"]
    assert last["tool_choice"] == "required"
    assert json.dumps(first["messages"]).count("<excerpt ") == 2


def test_excerpts_reach_the_model_as_the_docs_text(site: Site) -> None:
    question = "How do I enable the systemd service for docpilot?"
    with OpenAIChatServer([Reply(text="NOT COVERED")], llama_cpp=True) as server:
        run(site, [provider_settings("openai", server)], AskRequest(question))
        sent = server.bodies[0]["messages"][1]["content"]
    assert "daemon-reload && systemctl enable" in sent
    assert "&amp;" not in sent


def test_a_shown_answer_only_ever_shows_validated_text(site: Site, primed: list[str]) -> None:
    hostile = f"<script>x</script> Front matter [[{primed[0]}]] and [[/invented/]]."
    with OpenAIChatServer([Reply(text=hostile)], llama_cpp=True) as server:
        result, _events = run(site, [provider_settings("openai", server)], AskRequest(QUESTION))
    assert result.kind == "answer" and result.checks is not None
    assert result.checks["ids_stripped"] == ["/invented/"]
    shown = text_of(result.blocks)
    assert "<script>" not in shown and shown.startswith("x Front matter")  # its text only


def test_a_sentence_citing_the_wrong_excerpt_is_cited_to_the_one_holding_it(
    site: Site, primed: list[str], kind: str
) -> None:
    claim = first_sentence(site, primed[1]).rstrip(".")
    with SERVERS[kind]([answer_reply(markdown=f"{claim} [[{primed[3]}]].")]) as server:
        result, _ = run(site, [provider_settings(kind, server)], AskRequest(QUESTION))
    assert result.kind == "answer" and [c.id for c in result.citations] == [primed[1]]
    assert result.checks is not None and result.checks["cited_by"] == "markers, re-attached"


def test_a_small_model_citing_what_no_excerpt_says_is_not_shown(site: Site) -> None:
    # The 1.5B model's reply to an off-topic question that passed the gate (issue 22 tune).
    text = "The capital of Australia is Canberra [1]."
    with OpenAIChatServer([Reply(text=text)], llama_cpp=True) as server:
        result, events = run(site, [compact(server)], AskRequest(QUESTION))
    assert result.kind == "refusal" and result.fallback_reason == "uncited"
    assert not deltas(events), "held while it names what no excerpt holds"
    assert "Australia" in (result.usage or {})["attempts"][0]["cause"]
