"""The daily spend cap under concurrency (issue 27, finding 5): 30 turns asked at once
against a slow scripted provider (each call reporting a known usage) spend no more than
the cap plus one call's estimate, in one process and across two processes' caps on one
records database; the turns past it settle as `passages` with `fallback_reason:
spend_cap`. Before, each turn checked the cap only as it started, so all 30 ran."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
from docpilot_runtime.limits.caps import MemoryCaps
from docpilot_runtime.limits.shared import DatabaseCaps
from docpilot_runtime.providers import Usage, cost_micro_usd
from docpilot_runtime.records import RecordsSettings
from docpilot_runtime.serve.app import build_app
from docpilot_runtime.settings.limits import LimitSettings
from docpilot_runtime.settings.load import Settings
from docpilot_runtime.settings.providers import ProviderSettings
from docpilot_runtime.turn import load_runtime
from load_driver import SlowChat
from records_backends import BACKENDS, database_url
from servers.openai_chat import tool_reply
from servers.runtime import serve_app
from small_site import INSTALL_QUESTION, INSTALL_UNIT

CAP = 100_000  # micro-USD
TURNS = 30
MODEL = "gpt-4o"
CALL_USAGE = Usage(input_tokens=1000, output_tokens=1000)
CALL_COST = cost_micro_usd(MODEL, CALL_USAGE)  # 12,500 micro-USD
# One call's estimate: this prompt (under 1,000 tokens counted generously) and the whole
# output budget (max_tokens 1,500), at the model's price.
ONE_ESTIMATE = cost_micro_usd(MODEL, Usage(input_tokens=1000, output_tokens=1500))


@pytest.fixture
def model() -> Iterator[SlowChat]:
    reply = tool_reply("answer", {"markdown": f"Install it with pip [[{INSTALL_UNIT}]]."},
                       input_tokens=CALL_USAGE.input_tokens,
                       output_tokens=CALL_USAGE.output_tokens)
    with SlowChat([reply] * TURNS, delay=1.0) as scripted:  # all 30 are in flight at once
        yield scripted


def settings_for(model: SlowChat, tmp_path: Path) -> Settings:
    caps = LimitSettings(answers_per_minute=0, answers_per_minute_per_client=0,
                         daily_spend_micro_usd=CAP, max_connections_per_client=0)
    provider = ProviderSettings(kind="openai", base_url=model.base_url, model=MODEL, retries=0)
    return Settings(providers=(provider,), caps=caps,
                    records=RecordsSettings(path=str(tmp_path / "records.sqlite3")))


async def ask_at_once(urls: list[str]) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(timeout=120) as client:
        answers = await asyncio.gather(*(
            client.post(urls[i % len(urls)] + "/api/ask", json={"question": INSTALL_QUESTION})
            for i in range(TURNS)))
    assert all(a.status_code == 200 for a in answers)
    return [a.json() for a in answers]


def check_turns(results: list[dict[str, Any]], spent: int) -> None:
    answered = [r for r in results if r["kind"] == "answer"]
    capped = [r for r in results if r.get("fallback_reason") == "spend_cap"]
    print(f"spent {spent} of {CAP}: {len(answered)} answered, {len(capped)} capped")
    assert spent <= CAP + ONE_ESTIMATE, f"spent {spent} against a cap of {CAP}"
    assert len(answered) >= CAP // ONE_ESTIMATE, "the cap was used, not refused early"
    assert capped and all(r["kind"] == "passages" for r in capped)
    assert len(answered) + len(capped) == TURNS
    assert spent == len(answered) * CALL_COST, "every call's cost was settled"


def test_thirty_turns_at_once_stay_within_the_cap_and_one_estimate(
    small_site: Path, model: SlowChat, tmp_path: Path
) -> None:
    settings = settings_for(model, tmp_path)
    caps = MemoryCaps(settings.caps)
    app = build_app(load_runtime(small_site, settings), small_site, caps=caps)
    with serve_app(app, settings=settings) as running:
        results = asyncio.run(ask_at_once([running.base_url]))
    check_turns(results, caps.spent)


def spend_and_holds(database: Path, url: str) -> tuple[int, int]:
    """The day's spend and the holds left, read from the caps' database."""
    queries = ("SELECT COALESCE(SUM(micro_usd), 0) FROM cap_spend",
               "SELECT COUNT(*) FROM cap_holds")
    if not url:
        with sqlite3.connect(database) as lite:
            return tuple(int(lite.execute(q).fetchone()[0]) for q in queries)  # type: ignore[return-value]
    import psycopg

    with psycopg.connect(url) as pg:
        return tuple(int(pg.execute(q).fetchone()[0]) for q in queries)  # type: ignore[index,return-value]


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_processes_caps_on_one_database_share_the_holds(
    small_site: Path, model: SlowChat, tmp_path: Path, backend: str
) -> None:
    settings = settings_for(model, tmp_path)
    database = tmp_path / "caps.sqlite3"
    with database_url(backend, tmp_path) as url:
        urls = []
        workers = [DatabaseCaps(settings.caps, database, database_url=url) for _ in range(2)]
        with ExitStack() as stack:
            for caps in workers:  # two workers: their own runtime, app and caps, one database
                app = build_app(load_runtime(small_site, settings), small_site, caps=caps)
                urls.append(stack.enter_context(serve_app(app, settings=settings)).base_url)
            results = asyncio.run(ask_at_once(urls))
        for caps in workers:
            asyncio.run(caps.aclose())
        spent, held = spend_and_holds(database, url)
    check_turns(results, spent)
    assert held == 0, "every hold was settled"


def test_a_hold_is_refused_once_spent_and_held_reach_the_cap_and_a_lost_one_expires() -> None:
    clock = [0.0]
    caps = MemoryCaps(LimitSettings(daily_spend_micro_usd=100), clock=lambda: clock[0])

    async def go() -> list[object]:
        first = await caps.hold_spend(60)
        second = await caps.hold_spend(60)  # 60 < 100: the last one let in may pass it
        third = await caps.hold_spend(1)  # 120 >= 100
        assert first is not None and second is not None
        await caps.settle_spend(first, 10)
        fourth = await caps.hold_spend(1)  # 10 spent + 60 held < 100
        clock[0] += 10_000  # the second and fourth are never settled (a call that died)
        fifth = await caps.hold_spend(50)
        return [third, fourth, fifth, caps.spent]

    third, fourth, fifth, spent = asyncio.run(go())
    assert third is None and fourth is not None and fifth is not None and spent == 10
