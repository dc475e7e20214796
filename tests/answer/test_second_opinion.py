"""The second opinion: after a confident answer, a separate call to a scripted provider
that sees only the answer and its cited passages (no system instructions, no history,
not even the question), whose verdict is stored with the turn, carried by the turn's
webhook and shown in the report."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from docpilot_runtime.answer.second_opinion import check_prompt, read_verdict
from docpilot_runtime.providers import ProviderSettings
from docpilot_runtime.records import RecordsSettings, open_store
from docpilot_runtime.report import write_report
from docpilot_runtime.serve.app import create_app
from docpilot_runtime.settings.load import Settings, SettingsError, load_settings
from docpilot_runtime.settings.second_opinion import SecondOpinionSettings
from docpilot_runtime.settings.webhooks import WebhookSettings
from docpilot_runtime.shared.types import AskRequest
from docpilot_runtime.sites.loader import load_site
from servers.anthropic_messages import Reply, answer_reply
from servers.asgi import in_process
from servers.openai_chat import OpenAIChatServer
from servers.runtime import NO_CAPS
from servers.webhook_receiver import WebhookReceiver

COVERED = "How do I exclude a page from the assistant?"
EARLIER = "Which embedder does the index use by default?"
SECRET_ENV = "DOCPILOT_TEST_WEBHOOK_SECRET"


def test_only_the_three_words_are_read_from_the_reply() -> None:
    assert read_verdict("Supported.") == "supported"
    assert read_verdict("verdict: unsupported") == "unsupported"
    assert read_verdict("partial - one claim is not in [2]") == "partial"
    assert read_verdict("I think the answer is fine") is None
    assert read_verdict("well-supported") == "supported"


def test_the_prompt_holds_the_passages_and_the_answer_as_data() -> None:
    prompt = check_prompt("Use `exclude` [1].", [("Setup > Exclude", "Set exclude: ...")])
    assert "[1] Setup > Exclude\nSet exclude: ..." in prompt
    assert prompt.rstrip().endswith("Answer:\nUse `exclude` [1].")


def test_enabling_it_without_a_provider_names_the_table(tmp_path: Path) -> None:
    config = tmp_path / "docpilot.toml"
    config.write_text("[second_opinion]\nenabled = true\n", encoding="utf-8")
    with pytest.raises(SettingsError) as caught:
        load_settings(config)
    assert str(config) in str(caught.value) and "[second_opinion]" in str(caught.value)


@pytest.fixture
def unit_id(example_site: Path) -> str:
    unit: str = load_site(example_site, "/").retrieve(AskRequest(COVERED)).shown_units()[0].id
    return unit


def run_turn(
    site: Path, tmp_path: Path, unit_id: str, opinion: SecondOpinionSettings, verdict: str,
    receiver: WebhookReceiver | None = None,
) -> tuple[OpenAIChatServer, dict[str, Any], list[dict[str, Any]]]:
    """One answered turn (with an earlier turn in its history) through a real runtime."""
    steps = [answer_reply(markdown=f"Set `docpilot: exclude` [[{unit_id}]]."), Reply(text=verdict)]
    with OpenAIChatServer(steps) as llm:
        provider = ProviderSettings(
            kind="openai", base_url=llm.base_url, model="scripted-model", retries=0
        )
        hooks = WebhookSettings(
            urls=(receiver.url,), secret_env=SECRET_ENV, backoff_seconds=0.05
        ) if receiver else WebhookSettings()
        settings = Settings(
            providers=(provider,), caps=NO_CAPS, second_opinion=opinion, webhooks=hooks,
            records=RecordsSettings(path=str(tmp_path / "records.sqlite3")),
        )
        history = [{"question": EARLIER, "kind": "answer", "markdown": "WordLlama, offline."}]
        with in_process(create_app(site, settings)) as client:
            body = {"question": COVERED, "history": history}
            result = client.post("/api/ask", json=body).json()
            if receiver is not None:
                receiver.wait_for(lambda r: len(r.processed) == 1)
        # The server has stopped: pending second opinions settled, the spool drained.
        store = open_store(settings.records.sqlite_path())
        try:
            turns = store.turns()
            write_report(store, tmp_path / "report")
        finally:
            store.close()
    return llm, result, turns


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch) -> Iterator[WebhookReceiver]:
    monkeypatch.setenv(SECRET_ENV, "opinion-secret")
    with WebhookReceiver(b"opinion-secret") as running:
        yield running


def test_a_confident_answer_is_checked_by_a_call_that_sees_only_answer_and_passages(
    example_site: Path, tmp_path: Path, unit_id: str, receiver: WebhookReceiver
) -> None:
    opinion = SecondOpinionSettings(enabled=True, min_confidence=0)
    llm, result, turns = run_turn(example_site, tmp_path, unit_id, opinion, "partial", receiver)
    assert result["kind"] == "answer"
    assert len(llm.requests) == 2
    reader, check = (request.body for request in llm.requests)
    system = [m["content"] for m in reader["messages"] if m["role"] == "system"]
    assert system and EARLIER in str(reader)  # the reader's call had both
    assert [m["role"] for m in check["messages"]] == ["user"]  # no system, no history
    text = check["messages"][0]["content"]
    assert system[0] not in text and EARLIER not in text and COVERED not in text
    assert "tools" not in check or not check["tools"]
    # The passage the answer cites (the support check may have re-cited the claim to the
    # shown excerpt that holds it: check/support.reattach).
    [cited] = [c["id"] for c in result["citations"]]
    unit = next(u for u in load_site(example_site, "/").bundle.units if u.id == cited)
    assert unit.text[:200] in text and "Set `docpilot: exclude`" in text
    [turn] = turns
    assert turn["verdict"] == "partial" and turn["verdict_model"] == "openai:scripted-model"
    [event] = receiver.processed.values()
    assert event["type"] == "chat.question_asked" and event["data"]["verdict"] == "partial"
    html = (tmp_path / "report" / "report.html").read_text(encoding="utf-8")
    assert "Second opinions" in html and "partial" in html and COVERED in html


def test_an_answer_below_the_threshold_gets_no_second_call(
    example_site: Path, tmp_path: Path, unit_id: str
) -> None:
    opinion = SecondOpinionSettings(enabled=True, min_confidence=100)
    llm, result, turns = run_turn(example_site, tmp_path, unit_id, opinion, "supported")
    assert result["kind"] == "answer" and result["confidence"] < 100
    assert len(llm.requests) == 1
    assert turns[0]["verdict"] is None


def test_the_second_opinion_counts_against_the_daily_spend(
    example_site: Path, tmp_path: Path, unit_id: str
) -> None:
    """Its call costs money like the answer's: the day's spend holds both, and once the
    cap is reached the next turn settles as passages with no model and no second call."""
    from dataclasses import replace

    from docpilot_runtime.limits.caps import MemoryCaps
    from docpilot_runtime.serve.app import build_app
    from docpilot_runtime.turn import load_runtime

    steps = [answer_reply(markdown=f"Set `docpilot: exclude` [[{unit_id}]]."), Reply(text="ok")]
    with OpenAIChatServer(steps) as llm:
        provider = ProviderSettings(
            kind="openai", base_url=llm.base_url, model="scripted-model", retries=0
        )
        settings = Settings(
            providers=(provider,),
            second_opinion=SecondOpinionSettings(enabled=True, min_confidence=0),
            caps=replace(NO_CAPS, public_usage=True, daily_spend_micro_usd=10**9),
            records=RecordsSettings(path=str(tmp_path / "records.sqlite3")),
        )
        caps = MemoryCaps(settings.caps)
        runtime = load_runtime(example_site, settings)
        with in_process(build_app(runtime, example_site, caps=caps)) as client:
            first = client.post("/api/ask", json={"question": COVERED}).json()
            assert first["kind"] == "answer"
            answer_cost = first["usage"]["cost_micro_usd"]
            assert answer_cost > 0
            deadline = time.monotonic() + 30
            while caps.spent <= answer_cost and time.monotonic() < deadline:
                time.sleep(0.02)  # polled: the second opinion runs after the answer
            assert len(llm.requests) == 2
            assert caps.spent > answer_cost  # the verdict's call was added
            # The owner's cap is now what was spent: the next turn calls no model at all.
            caps.settings = replace(caps.settings, daily_spend_micro_usd=caps.spent)
            second = client.post("/api/ask", json={"question": COVERED}).json()
            assert second["kind"] == "passages" and second["fallback_reason"] == "spend_cap"
            assert len(llm.requests) == 2
