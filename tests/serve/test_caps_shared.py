"""Caps shared through the records database, on SQLite and PostgreSQL: two `DatabaseCaps`
on one database count against one cap and one day's spend; two real `docpilot serve`
processes share one cap, and over it no provider call is made (the scripted provider
records every call), on `/api/ask` and on the MCP `ask` tool alike; an unreachable
database leaves each process counting alone instead of failing readers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from docpilot_runtime.limits.shared import DatabaseCaps
from docpilot_runtime.settings.limits import LimitSettings
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from records_backends import BACKENDS, database_url
from servers.openai_chat import OpenAIChatServer, answer_reply
from servers.processes import ServeProcess, free_port

COVERED = "How do I exclude a page from the assistant?"


@dataclass
class Wall:
    """A wall clock the test moves by hand."""

    now: float = 1_764_547_200.0  # 2025-12-01T00:00:00Z

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=BACKENDS)
def shared_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """(SQLite file, PostgreSQL URL or "") of one fresh database."""
    with database_url(request.param, tmp_path) as url:
        yield tmp_path / "records.sqlite3", url


def two_caps(shared_db: tuple[Path, str], limits: LimitSettings, wall: Wall) -> list[DatabaseCaps]:
    path, url = shared_db
    return [DatabaseCaps(limits, path, url, wall=wall) for _ in range(2)]


def test_two_caps_on_one_database_count_against_one_client_and_site_cap(
    shared_db: tuple[Path, str],
) -> None:
    wall = Wall()
    limits = LimitSettings(answers_per_minute=4, answers_per_minute_per_client=3)
    first, second = two_caps(shared_db, limits, wall)

    async def scenario() -> list[tuple[bool, str, int]]:
        seen = []
        for caps, client in [(first, "a"), (second, "a"), (first, "a"), (second, "a"),
                             (second, "b"), (first, "c")]:
            admission = await caps.admit("/", client)
            seen.append((admission.allowed, admission.cap, admission.retry_after))
        wall.now += 20  # one client token back (3 per minute), one site token back
        again = await second.admit("/", "a")
        seen.append((again.allowed, again.cap, again.retry_after))
        for caps in (first, second):
            await caps.aclose()
        return seen

    seen = asyncio.run(scenario())
    assert seen[:3] == [(True, "", 0)] * 3
    assert seen[3] == (False, "client", 20), "the other process's answers counted"
    assert seen[4] == (True, "", 0)
    assert seen[5] == (False, "site", 15), "four answers of the site's four, across both"
    assert seen[6] == (True, "", 0)


def test_two_caps_on_one_database_share_the_days_spend(shared_db: tuple[Path, str]) -> None:
    wall = Wall()
    first, second = two_caps(shared_db, LimitSettings(daily_spend_micro_usd=100), wall)

    async def scenario() -> list[bool]:
        seen = [await second.spend_exhausted()]
        await first.record_spend(60)
        seen.append(await second.spend_exhausted())
        await second.record_spend(40)
        seen.append(await first.spend_exhausted())
        wall.now += 86_400
        seen.append(await first.spend_exhausted())
        for caps in (first, second):
            await caps.aclose()
        return seen

    assert asyncio.run(scenario()) == [False, False, True, False]


def test_an_unreachable_database_leaves_each_process_counting_alone(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    dead = f"postgresql://postgres@127.0.0.1:{free_port()}/nothing"
    caps = DatabaseCaps(LimitSettings(answers_per_minute_per_client=2), tmp_path / "x", dead)

    async def scenario() -> list[bool]:
        return [(await caps.admit("/", "a")).allowed for _ in range(3)]

    assert asyncio.run(scenario()) == [True, True, False], "memory caps while it is away"
    assert any("caps database unavailable" in r.getMessage() for r in caplog.records)


# ---------------------------------------------------------------- two real processes


def write_config(tmp_path: Path, model: OpenAIChatServer, limits: str) -> Path:
    config = tmp_path / "docpilot.toml"
    config.write_text(
        f"[records]\npath = {json.dumps(str(tmp_path / 'records.sqlite3'))}\n"
        f"[limits]\nshared = true\n{limits}\n"
        f'[[providers]]\nkind = "openai"\nbase_url = "{model.base_url}"\n'
        'model = "gpt-4o-mini"\nretries = 0\n',
        encoding="utf-8",
    )
    return config


async def mcp_ask(base_url: str, question: str) -> tuple[bool, dict[str, Any]]:
    async with (
        streamable_http_client(base_url + "/mcp") as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        result = await session.call_tool("ask", {"question": question})
        return bool(result.is_error), dict(result.structured_content or {})


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_runtime_processes_share_one_cap_and_make_no_provider_call_over_it(
    example_site: Path, tmp_path: Path, backend: str
) -> None:
    with (
        database_url(backend, tmp_path) as url,
        OpenAIChatServer([answer_reply(markdown="Uncited on purpose.")] * 10) as model,
    ):
        # Two answers a minute for the site: one token every 30 s, far more than the test takes.
        config = write_config(tmp_path, model, "answers_per_minute = 2\n"
                                               "answers_per_minute_per_client = 0")
        with (
            ServeProcess(example_site, config, tmp_path / "a.log", url) as a,
            ServeProcess(example_site, config, tmp_path / "b.log", url) as b,
        ):
            statuses = []
            for runtime in (a, b, a, b):
                response = httpx.post(
                    runtime.base_url + "/api/ask", json={"question": COVERED}, timeout=60
                )
                statuses.append(response.status_code)
            assert statuses == [200, 200, 429, 429]
            assert len(model.requests) == 2, "no provider call over the shared cap"
            refused = asyncio.run(mcp_ask(b.base_url, COVERED))
            assert refused[0] and "answer cap reached (site)" in refused[1]["error"]
            assert len(model.requests) == 2, "the MCP ask tool counts against the same cap"


def test_serve_with_workers_shares_the_cap_through_the_sqlite_file(
    example_site: Path, tmp_path: Path
) -> None:
    with OpenAIChatServer([answer_reply(markdown="Uncited on purpose.")] * 10) as model:
        config = write_config(tmp_path, model, "answers_per_minute = 2\n"
                                               "answers_per_minute_per_client = 0")
        # `shared` left out: --workers turns it on.
        config.write_text(config.read_text().replace("shared = true\n", ""), encoding="utf-8")
        with ServeProcess(example_site, config, tmp_path / "w.log", "", "--workers", "2") as w:
            statuses = [
                httpx.post(w.base_url + "/api/ask", json={"question": COVERED}, timeout=60)
                .status_code
                for _ in range(5)
            ]
        assert statuses == [200, 200, 429, 429, 429]
        assert len(model.requests) == 2
        assert "Started parent process" in (tmp_path / "w.log").read_text(errors="replace")
