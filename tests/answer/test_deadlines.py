"""Deadlines move the answer ladder on: a provider that only sends keep-alive comments
(as hosted routers do while a request is queued) is abandoned at its first-token
timeout, one that goes quiet mid-answer at its idle timeout, and a turn that reaches its
whole-turn deadline settles as `passages`. Each abandoned stream is closed by the client.

Measured before: httpx's read timeout restarts on every byte, so keep-alives held a turn
open for ever and the ladder never moved on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from docpilot_runtime.providers import Message, ProviderError, ProviderSettings, make_provider
from docpilot_runtime.retrieve.site import Site
from docpilot_runtime.settings.answer import AnswerSettings
from docpilot_runtime.settings.load import Settings, SettingsError, load_settings
from docpilot_runtime.shared.types import AskRequest, Result
from docpilot_runtime.sites.loader import load_site
from docpilot_runtime.turn import Runtime
from servers.anthropic_messages import AnthropicServer, Fault, ScriptedServer, answer_reply
from servers.openai_chat import OpenAIChatServer

QUESTION = "How do I exclude a page from the assistant?"
SERVERS = {"anthropic": AnthropicServer, "openai": OpenAIChatServer}
FOREVER = 600.0  # longer than the test: a stream that ends was ended by the client
KEEPALIVES_ONLY = Fault("keepalive", seconds=FOREVER, interval=0.02)
WAIT = 30.0


@pytest.fixture(scope="module")
def site(example_site: Path) -> Site:
    return load_site(example_site, "/")


@pytest.fixture(scope="module")
def primed(site: Site) -> list[str]:
    return [site.bundle.units[u].id for u in site.retrieve(AskRequest(QUESTION)).model_order()[:6]]


@pytest.fixture(params=["anthropic", "openai"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def queued(kind: str) -> Iterator[ScriptedServer]:
    """A provider that answers every request with keep-alive comments only."""
    with SERVERS[kind]([KEEPALIVES_ONLY] * 2) as server:
        yield server


def settings(kind: str, server: ScriptedServer, **extra: Any) -> ProviderSettings:
    return ProviderSettings(
        kind=kind, base_url=server.base_url, model=f"{kind}-test", retries=0, **extra
    )


def ask(site: Site, providers: list[ProviderSettings], answer: AnswerSettings) -> Result:
    async def go() -> Result:
        runtime = Runtime(
            sites=[site],
            settings=Settings(answer=answer),
            providers=[make_provider(p) for p in providers],
        )
        try:
            return await runtime.ask(AskRequest(QUESTION))
        finally:
            await runtime.aclose()

    return asyncio.run(go())


def closed_by_client(server: ScriptedServer, number: int = 1) -> bool:
    return server.wait_until(lambda s: number in s.closed_by_client, WAIT)


def test_keepalives_only_are_abandoned_at_first_token_timeout_and_the_next_rung_answers(
    site: Site, primed: list[str], kind: str, queued: ScriptedServer
) -> None:
    with OpenAIChatServer([answer_reply(markdown=f"Set `exclude` [[{primed[0]}]].")]) as good:
        result = ask(
            site,
            [settings(kind, queued, first_token_timeout=0.3), settings("openai", good)],
            AnswerSettings(),
        )
    assert result.kind == "answer"
    assert len(good.requests) == 1
    assert len(queued.requests) == 1  # abandoned, not retried
    assert closed_by_client(queued)


def test_keepalives_past_the_turn_deadline_settle_as_passages(
    site: Site, kind: str, queued: ScriptedServer
) -> None:
    # The first-token timeout alone would wait ten minutes; the turn deadline does not.
    result = ask(
        site,
        [settings(kind, queued, first_token_timeout=FOREVER, timeout=FOREVER)],
        AnswerSettings(turn_deadline=0.5),
    )
    assert result.kind == "passages" and result.citations
    assert closed_by_client(queued)


def test_a_stream_gone_quiet_mid_answer_is_abandoned_at_idle_timeout(kind: str) -> None:
    stall = Fault("stall_mid_stream", seconds=FOREVER)
    with SERVERS[kind]([stall]) as server:
        provider = make_provider(settings(kind, server, idle_timeout=0.3, timeout=FOREVER))

        async def go() -> ProviderError:
            try:
                await provider.complete(["rules"], [Message("user", "hi")], [])
            except ProviderError as exc:
                return exc
            finally:
                await provider.aclose()
            raise AssertionError("the stalled stream was not abandoned")

        error = asyncio.run(go())
    assert error.kind == "timeout"
    assert "idle_timeout" in str(error)


@pytest.mark.parametrize(
    ("table", "key"),
    [
        (
            "[[providers]]\nkind = 'openai'\nmodel = 'm'\nfirst_token_timeout = 0",
            "first_token_timeout",
        ),
        ("[[providers]]\nkind = 'openai'\nmodel = 'm'\nidle_timeout = 601", "idle_timeout"),
        ("[[providers]]\nkind = 'openai'\nmodel = 'm'\nidle_timeout = 'soon'", "idle_timeout"),
        ("[answer]\nturn_deadline = -1", "turn_deadline"),
        ("[answer]\nturn_deadline = 3601", "turn_deadline"),
        ("[answer]\nturn_deadline = true", "turn_deadline"),
    ],
)
def test_a_bad_deadline_setting_is_refused_naming_the_key(
    tmp_path: Path, table: str, key: str
) -> None:
    path = tmp_path / "docpilot.toml"
    path.write_text(table + "\n")
    with pytest.raises(SettingsError, match=key):
        load_settings(path)


def test_deadline_settings_are_read_from_the_file(tmp_path: Path) -> None:
    path = tmp_path / "docpilot.toml"
    path.write_text(
        "[answer]\nturn_deadline = 45.5\nmax_steps = 3\n\n"
        "[[providers]]\nkind = 'openai'\nmodel = 'm'\nfirst_token_timeout = 12\nidle_timeout = 4.5\n"
    )
    loaded = load_settings(path)
    assert loaded.answer.turn_deadline == 45.5 and loaded.answer.max_steps == 3
    assert loaded.providers[0].first_token_timeout == 12.0
    assert loaded.providers[0].idle_timeout == 4.5
