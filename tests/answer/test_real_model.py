"""A real small model behind DocPilot, through the HTTP API (issue 22, marker real_model).

The engine is llama.cpp's server with Qwen2.5-Coder-0.5B (`local_engine`). What a model
this small writes varies, so nothing here asserts wording: only the mechanisms that hold
whatever it writes. Every shown answer cites ids handed out in that turn; no link outside
the page set is live; an unusable reply ends on the right rung of the ladder; the deadline
holds; a question the gate refuses costs no model call.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from block_trees import hrefs
from docpilot_runtime.providers import ProviderSettings
from docpilot_runtime.retrieve.site import Site
from docpilot_runtime.serve.app import create_app
from docpilot_runtime.settings.answer import AnswerSettings
from docpilot_runtime.settings.limits import LimitSettings
from docpilot_runtime.settings.load import Settings
from docpilot_runtime.shared.types import AskRequest
from docpilot_runtime.sites.loader import load_site
from local_engine import MODEL
from servers.runtime import serve_app

pytestmark = pytest.mark.real_model

COVERED = (
    "What host and port does docpilot serve use by default?",
    "How do I exclude a page from the assistant with front matter?",
)
UNCOVERED = "What is a good recipe for banana bread with walnuts?"
DEADLINE_QUESTION = "How do I keep API keys out of the settings file?"
CPU = {"timeout": 600.0, "first_token_timeout": 600.0, "idle_timeout": 300.0}


def model(engine: Any, **extra: Any) -> ProviderSettings:
    """The local model as an owner configures it (the guide's settings example)."""
    values: dict[str, Any] = {
        "kind": "openai", "base_url": engine.base_url, "model": MODEL, "profile": "compact",
        "temperature": 0.0, "max_tokens": 160, **CPU, **extra,
    }
    return ProviderSettings(**values)


@contextmanager
def runtime(
    site_dir: Path, *providers: ProviderSettings, public_usage: bool = False, **answer: Any
) -> Iterator[httpx.Client]:
    caps = LimitSettings(
        answers_per_minute=0, answers_per_minute_per_client=0, public_usage=public_usage
    )
    settings = Settings(providers=providers, caps=caps, answer=AnswerSettings(**answer))
    with (
        serve_app(create_app(site_dir, settings)) as running,
        httpx.Client(base_url=running.base_url, timeout=900) as client,
    ):
        yield client


def ask_stream(client: httpx.Client, question: str) -> tuple[list[tuple[str, Any]], float]:
    """Every SSE event of one turn (name, data), and the seconds the turn took."""
    events: list[tuple[str, Any]] = []
    name = ""
    began = time.monotonic()
    with client.stream(
        "POST", "/api/ask", json={"question": question}, headers={"Accept": "text/event-stream"}
    ) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                events.append((name, json.loads(line[6:])))
    return events, time.monotonic() - began


def handed_out(site: Site, question: str, count: int) -> set[str]:
    """The ids of the excerpts the compact first message carries for ``question``."""
    order = site.retrieve(AskRequest(question)).model_order()[:count]
    return {site.bundle.units[row].id for row in order}




def live_links_are_pages(site: Site, blocks: list[Any], excerpts: str) -> list[str]:
    """The links in ``blocks`` that point neither at a page (and anchor) of the site nor
    at an off-site URL the turn's excerpts carried."""
    pages = {p.url: p for p in site.bundle.pages}
    wrong = []
    for href in hrefs(blocks):
        if href.startswith(("http://", "https://")):
            if href not in excerpts:
                wrong.append(href)
            continue
        path, _, anchor = href.partition("#")
        page = pages.get(path)
        if page is None or (anchor and anchor not in page.ids):
            wrong.append(href)
    return wrong


@pytest.fixture(scope="module")
def site(example_site: Path) -> Site:
    return load_site(example_site, "/")


def test_covered_questions_end_grounded_whatever_the_model_writes(
    local_model: Any, example_site: Path, site: Site
) -> None:
    with runtime(example_site, model(local_model)) as client:
        turns = [ask_stream(client, q) for q in COVERED]
    for question, (events, _) in zip(COVERED, turns, strict=True):
        names = [n for n, _ in events]
        assert names[-1] == "answer" and "progress" in names
        result = events[-1][1]
        assert result["kind"] in ("answer", "passages", "refusal")
        assert result["usage"] is None, "usage stays off the public API by default"
        given = handed_out(site, question, 3)
        if result["kind"] == "answer":
            assert {c["id"] for c in result["citations"]} <= given, question
            # What streamed is the start of the final answer (the final may join a soft
            # line break as a space when the whole answer is validated again).
            shown = " ".join("".join(d["text"] for n, d in events if n == "delta").split())
            final = " ".join(result["markdown"].split())
            assert final.startswith(shown[: len(shown) // 2]), "validated text"
        if result["kind"] in ("answer", "passages"):
            excerpts = " ".join(site.bundle.units[site.unit_rows[i]].text for i in given)
            assert not live_links_are_pages(site, result["blocks"], excerpts)


def test_a_question_the_gate_refuses_calls_no_model(
    local_model: Any, example_site: Path
) -> None:
    with runtime(example_site, model(local_model)) as client:
        events, took = ask_stream(client, UNCOVERED)
    result = events[-1][1]
    assert result["kind"] == "refusal" and result["fallback_reason"] is None
    assert took < 30, "no model was asked"


def test_an_unusable_reply_ends_on_the_right_rung(local_model: Any, example_site: Path) -> None:
    # The first rung's replies are cut after one token: never usable. The second rung is
    # the same model as an owner would configure it. The engine reuses the prompt it has
    # just read, so the second rung costs little more than its answer.
    cut = model(local_model, max_tokens=1, retries=0)
    with runtime(example_site, cut, model(local_model), public_usage=True) as client:
        events, _ = ask_stream(client, COVERED[0])
    result = events[-1][1]
    attempts = result["usage"]["attempts"]
    assert len(attempts) == 2
    assert attempts[0]["outcome"] == "failed" and "max_tokens" in attempts[0]["cause"]
    assert attempts[0]["output_tokens"] == 1, "the failed call's tokens are counted"
    expected = {
        "answer": ("answer", None),
        "uncited": ("refusal", "uncited"),
        "failed": ("passages", "models_failed"),
    }[attempts[1]["outcome"]]
    assert (result["kind"], result["fallback_reason"]) == expected


def test_the_turn_deadline_holds_on_a_cpu(local_model: Any, example_site: Path) -> None:
    # A compact prompt (some 600 tokens, most of them excerpts no other test asks for, so
    # the engine has none of it cached) takes this CPU far longer than 3 s to read. Not
    # the full profile: the engine reads on after the client has gone, until the prompt
    # is read (measured: 100 s for the full profile's 2,000 tokens), and that time is
    # taken from the other tests.
    slow = model(local_model, retries=0)
    with runtime(example_site, slow, turn_deadline=3.0) as client:
        events, took = ask_stream(client, DEADLINE_QUESTION)
    result = events[-1][1]
    assert result["kind"] == "passages" and result["fallback_reason"] == "turn_deadline"
    assert took < 3.0 + 20, "the turn ended at its deadline (retrieval and set-up aside)"
