"""The rate caps and the spend bound: the token buckets and client addresses on their own,
then through a real uvicorn serving example-site with a scripted OpenAI-compatible
provider that records every call it receives."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from corpora import ROOT
from docpilot_runtime.limits.caps import WINDOW_SECONDS, MemoryCaps, TokenBuckets, client_address
from docpilot_runtime.serve.app import build_app
from docpilot_runtime.settings.limits import LimitSettings, parse_networks
from docpilot_runtime.settings.load import Settings, SettingsError, load_settings
from docpilot_runtime.settings.providers import ProviderSettings
from docpilot_runtime.turn import load_runtime
from servers.anthropic_messages import Reply, answer_reply
from servers.openai_chat import OpenAIChatServer
from servers.runtime import serve_app

COVERED = "How do I exclude a page from the assistant?"
PRICED_MODEL = "gpt-4o-mini"  # in the pricing table, so a turn costs something


@dataclass
class Clock:
    """A clock the test moves by hand: the caps' time, without sleeping."""

    now: float = 1_000.0

    def __call__(self) -> float:
        return self.now


def run(coro: Any) -> Any:
    return asyncio.run(coro)


# ---------------------------------------------------------------------- units


def test_a_bucket_lets_a_burst_of_its_size_through_then_refills_at_its_rate() -> None:
    buckets = TokenBuckets(per_minute=3)
    for _ in range(3):
        assert buckets.wait("a", 0.0) == 0.0
        buckets.take("a", 0.0)
    assert buckets.wait("a", 0.0) == pytest.approx(WINDOW_SECONDS / 3)
    assert buckets.wait("a", WINDOW_SECONDS / 3) == 0.0
    assert buckets.wait("b", 0.0) == 0.0, "another key has its own bucket"


def test_idle_buckets_are_forgotten_so_memory_follows_the_last_minute() -> None:
    buckets = TokenBuckets(per_minute=2)
    for i in range(50):
        buckets.take(f"client-{i}", 0.0)
    assert len(buckets) == 50
    buckets.take("late", WINDOW_SECONDS + 1)
    assert len(buckets) == 1


def test_tracked_clients_are_capped_under_a_spread_flood() -> None:
    buckets = TokenBuckets(per_minute=2, max_keys=10)
    for i in range(100):
        buckets.take(f"client-{i}", 0.0)
    assert len(buckets) == 10


def test_a_refused_client_takes_nothing_from_the_site() -> None:
    clock = Clock()
    caps = MemoryCaps(LimitSettings(answers_per_minute=3, answers_per_minute_per_client=1), clock)
    assert run(caps.admit("/", "flooder")).allowed
    for _ in range(10):
        refused = run(caps.admit("/", "flooder"))
        assert not refused.allowed and refused.cap == "client"
        assert refused.retry_after == 60
    assert run(caps.admit("/", "reader-1")).allowed
    assert run(caps.admit("/", "reader-2")).allowed
    site_full = run(caps.admit("/", "reader-3"))
    assert not site_full.allowed and site_full.cap == "site" and site_full.retry_after == 20


def test_zero_switches_a_cap_off() -> None:
    caps = MemoryCaps(LimitSettings(answers_per_minute=0, answers_per_minute_per_client=0))
    assert all(run(caps.admit("/", "c")).allowed for _ in range(500))


def test_spend_cap_counts_per_utc_day() -> None:
    day = Clock(now=1_764_547_200.0)  # 2025-12-01T00:00:00Z
    caps = MemoryCaps(LimitSettings(daily_spend_micro_usd=100), wall=day)
    assert not run(caps.spend_exhausted())
    run(caps.record_spend(60))
    assert not run(caps.spend_exhausted())
    run(caps.record_spend(40))
    assert run(caps.spend_exhausted())
    day.now += 86_400
    assert not run(caps.spend_exhausted()), "a new UTC day starts from zero"


PROXIES = parse_networks(["127.0.0.1", "10.0.0.0/8"], "test")


@pytest.mark.parametrize(
    ("peer", "forwarded", "client"),
    [
        ("203.0.113.7", ["198.51.100.1"], "203.0.113.7"),  # untrusted peer: header ignored
        ("127.0.0.1", ["198.51.100.1"], "198.51.100.1"),
        ("127.0.0.1", ["6.6.6.6, 198.51.100.1"], "198.51.100.1"),  # left part is the client's
        ("127.0.0.1", ["198.51.100.1, 10.1.2.3"], "198.51.100.1"),  # trusted hops skipped
        ("127.0.0.1", ["6.6.6.6", "198.51.100.1"], "198.51.100.1"),  # repeated headers
        ("127.0.0.1", ["not-an-address"], "127.0.0.1"),
        ("127.0.0.1", [], "127.0.0.1"),
    ],
)
def test_forwarded_for_is_believed_only_from_trusted_proxies(
    peer: str, forwarded: list[str], client: str
) -> None:
    assert client_address(peer, forwarded, PROXIES) == client


def write_settings(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "docpilot.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_limits_table_is_read_and_checked(tmp_path: Path) -> None:
    settings = load_settings(
        write_settings(
            tmp_path,
            "[limits]\nanswers_per_minute = 60\nanswers_per_minute_per_client = 5\n"
            'trusted_proxies = ["10.0.0.0/8"]\ndaily_spend_micro_usd = 2000000\n'
            "public_usage = true\nbody_read_seconds = 2.5\nmax_connections = 50\n",
        )
    )
    assert settings.caps.answers_per_minute == 60
    assert settings.caps.answers_per_minute_per_client == 5
    assert [str(n) for n in settings.caps.trusted_proxies] == ["10.0.0.0/8"]
    assert settings.caps.daily_spend_micro_usd == 2_000_000
    assert settings.caps.public_usage is True
    assert settings.caps.body_read_seconds == 2.5
    assert settings.caps.max_connections == 50


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ("answers_per_minute = -1", "answers_per_minute"),
        ('answers_per_minute_per_client = "5"', "answers_per_minute_per_client"),
        ("daily_spend_micro_usd = 1.5", "daily_spend_micro_usd"),
        ("public_usage = 1", "public_usage"),
        ('trusted_proxies = ["proxy.example"]', "proxy.example"),
        ("max_connections = 0", "max_connections"),
        ("body_read_seconds = 0", "body_read_seconds"),
        ("answer_per_minute = 5", "answer_per_minute"),
    ],
)
def test_bad_limits_name_the_file_and_the_key(tmp_path: Path, line: str, named: str) -> None:
    path = write_settings(tmp_path, f"[limits]\n{line}\n")
    with pytest.raises(SettingsError) as caught:
        load_settings(path)
    assert str(path) in str(caught.value) and named in str(caught.value)


# ---------------------------------------------------------------------- over real HTTP


@dataclass
class Served:
    http: httpx.Client
    model: OpenAIChatServer
    clock: Clock
    wall: Clock


Serve = Callable[..., Served]


@pytest.fixture
def serve(example_site: Path) -> Iterator[Serve]:
    """``serve(**limits)``: example-site behind a real uvicorn with one scripted provider,
    under those `LimitSettings`, on clocks the test controls."""
    with ExitStack() as stack:

        def start(**values: Any) -> Served:
            limits = LimitSettings(**values)
            clock, wall = Clock(), Clock(now=1_764_547_200.0)
            model = stack.enter_context(OpenAIChatServer())
            provider = ProviderSettings(
                kind="openai", base_url=model.base_url, model=PRICED_MODEL, retries=0
            )
            runtime = load_runtime(example_site, Settings(providers=(provider,), caps=limits))
            app = build_app(runtime, example_site, MemoryCaps(limits, clock, wall))
            running = stack.enter_context(serve_app(app))
            http = stack.enter_context(httpx.Client(base_url=running.base_url))
            return Served(http, model, clock, wall)

        yield start


def script_answers(model: OpenAIChatServer, count: int) -> None:
    model.script(*[answer_reply(markdown="Uncited on purpose.") for _ in range(count)])


def ask(http: httpx.Client, headers: dict[str, str] | None = None) -> httpx.Response:
    return http.post("/api/ask", json={"question": COVERED}, headers=headers or {})


def test_200_rapid_requests_from_one_address_get_429_past_the_cap_and_no_provider_call(
    serve: Serve,
) -> None:
    served = serve(answers_per_minute=1000, answers_per_minute_per_client=5)
    script_answers(served.model, 200)
    responses = [ask(served.http) for _ in range(200)]
    statuses = [r.status_code for r in responses]
    assert statuses[:5] == [200] * 5
    assert statuses[5:] == [429] * 195
    assert len(served.model.requests) == 5, "no provider call beyond the cap"
    refused = responses[-1]
    assert refused.headers["content-type"].startswith("application/json")
    assert refused.headers["retry-after"] == "12"  # 5 per minute: one every 12 s
    assert refused.json()["error"]["retry_after"] == 12
    served.clock.now += 12
    assert ask(served.http).status_code == 200
    assert len(served.model.requests) == 6


def test_the_stream_is_capped_too(serve: Serve) -> None:
    served = serve(answers_per_minute=1000, answers_per_minute_per_client=2)
    script_answers(served.model, 3)
    headers = {"Accept": "text/event-stream"}
    statuses = [ask(served.http, headers).status_code for _ in range(3)]
    assert statuses == [200, 200, 429]
    assert len(served.model.requests) == 2


def test_the_site_cap_holds_across_clients(serve: Serve) -> None:
    served = serve(answers_per_minute=3, answers_per_minute_per_client=0)
    script_answers(served.model, 10)
    statuses = [ask(served.http).status_code for _ in range(10)]
    assert statuses == [200] * 3 + [429] * 7
    assert len(served.model.requests) == 3


def test_forwarded_for_from_an_untrusted_peer_does_not_make_new_clients(serve: Serve) -> None:
    served = serve(answers_per_minute=1000, answers_per_minute_per_client=1)
    script_answers(served.model, 10)
    statuses = [
        ask(served.http, {"X-Forwarded-For": f"198.51.100.{i}"}).status_code for i in range(10)
    ]
    assert statuses == [200] + [429] * 9
    assert len(served.model.requests) == 1


def test_forwarded_for_from_a_trusted_proxy_names_the_client(serve: Serve) -> None:
    served = serve(
        answers_per_minute=1000,
        answers_per_minute_per_client=1,
        trusted_proxies=tuple(parse_networks(["127.0.0.1"], "test")),
    )
    script_answers(served.model, 10)
    first = [ask(served.http, {"X-Forwarded-For": f"198.51.100.{i}"}).status_code for i in range(5)]
    again = ask(served.http, {"X-Forwarded-For": "198.51.100.0"}).status_code
    spoofed = ask(served.http, {"X-Forwarded-For": "6.6.6.6, 198.51.100.0"}).status_code
    assert first == [200] * 5, "each forwarded client has its own cap"
    assert again == 429 and spoofed == 429, "the hop the proxy saw is the one counted"
    assert len(served.model.requests) == 5


def test_past_the_spend_cap_a_turn_settles_as_passages_and_says_why(serve: Serve) -> None:
    served = serve(daily_spend_micro_usd=1)
    script_answers(served.model, 3)
    first = ask(served.http).json()
    assert len(served.model.requests) == 1
    assert first["fallback_reason"] == "uncited"  # the script answers without citations
    second = ask(served.http).json()
    assert len(served.model.requests) == 1, "no provider call past the cap"
    assert second["kind"] == "passages" and second["citations"]
    assert second["fallback_reason"] == "spend_cap"
    served.wall.now += 86_400
    third = ask(served.http).json()
    assert len(served.model.requests) == 2, "the next UTC day has its budget back"
    assert third["fallback_reason"] == "uncited"


def test_an_off_topic_turn_past_the_spend_cap_is_still_a_refusal(serve: Serve) -> None:
    served = serve(daily_spend_micro_usd=1)
    script_answers(served.model, 1)
    ask(served.http)
    off_topic = {"question": "What is the best recipe for sourdough bread?"}
    result = served.http.post("/api/ask", json=off_topic).json()
    assert result["kind"] == "refusal" and result["fallback_reason"] is None


def test_results_do_not_disclose_usage_unless_the_owner_publishes_it(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="docpilot.app")
    served = serve()
    script_answers(served.model, 2)
    plain = ask(served.http).json()
    stream = served.http.post(
        "/api/ask", json={"question": COVERED}, headers={"Accept": "text/event-stream"}
    ).text
    assert len(served.model.requests) == 2, "both turns called the model"
    assert plain["usage"] is None
    assert '"usage":null' in stream and PRICED_MODEL not in stream
    turn_line = next(r.getMessage() for r in caplog.records if plain["turn_id"] in r.getMessage())
    cost = int(turn_line.split("cost_micro_usd=", 1)[1].split()[0])
    assert cost > 0, "the owner's log keeps the cost"


def test_public_usage_puts_provider_model_and_cost_in_the_result(serve: Serve) -> None:
    served = serve(public_usage=True)
    script_answers(served.model, 1)
    usage = ask(served.http).json()["usage"]
    assert usage["provider"] == "openai" and usage["model"] == PRICED_MODEL
    assert usage["cost_micro_usd"] > 0


def test_the_complete_example_of_the_settings_reference_loads(tmp_path: Path) -> None:
    page = ROOT / "example-site/docs/reference/runtime-settings.md"
    example = page.read_text(encoding="utf-8").split('```toml title="docpilot.toml"\n', 1)[1]
    settings = load_settings(write_settings(tmp_path, example.split("```", 1)[0]))
    assert settings.caps.daily_spend_micro_usd == 5_000_000
    assert settings.caps.public_usage is False
    assert settings.headers.frame_ancestors == ("'self'",)


def test_a_failed_model_call_is_counted_by_the_spend_cap(serve: Serve) -> None:
    # Issue 22: a call whose reply was unusable left no tokens in the records, so the
    # spend cap never saw it. Here the one reply is cut at max_tokens.
    served = serve(daily_spend_micro_usd=1)
    served.model.script(Reply(text="Partial answer that never", cut=True))
    first = ask(served.http).json()
    assert first["kind"] == "passages" and first["fallback_reason"] == "models_failed"
    assert len(served.model.requests) == 1
    second = ask(served.http).json()
    assert second["fallback_reason"] == "spend_cap", "the failed call's cost was counted"
    assert len(served.model.requests) == 1
