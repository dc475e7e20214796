"""`GET /metrics` over real HTTP: off by default, behind a bearer token when one is named,
and counting turns by kind, stage latencies, provider errors, cap hits and the depth of
the spool and the webhook outbox, in the Prometheus text format; two apps in one process
keep their own counts. Several worker processes: test_metrics_workers.py."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from docpilot_runtime.providers import ProviderSettings
from docpilot_runtime.records import RecordsSettings
from docpilot_runtime.serve.app import create_app
from docpilot_runtime.settings.limits import LimitSettings
from docpilot_runtime.settings.load import Settings
from docpilot_runtime.settings.metrics import MetricsSettings
from docpilot_runtime.settings.webhooks import WebhookSettings
from prometheus_client.parser import text_string_to_metric_families
from records_session import REFUSED
from servers.anthropic_messages import Fault
from servers.openai_chat import OpenAIChatServer
from servers.runtime import serve_app
from servers.webhook_receiver import WebhookReceiver

TOKEN_ENV = "DOCPILOT_TEST_METRICS_TOKEN"
TOKEN = "metrics-token-for-tests"
SECRET_ENV = "DOCPILOT_TEST_WEBHOOK_SECRET"
COVERED = "How do I exclude a page from the assistant?"


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of an exposition, keyed by name and sorted labels."""
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch) -> Iterator[WebhookReceiver]:
    monkeypatch.setenv(SECRET_ENV, "metrics-secret")
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    with WebhookReceiver(b"metrics-secret", mode="down") as running:
        yield running


def test_metrics_are_off_unless_enabled(example_site: Path, tmp_path: Path) -> None:
    settings = Settings(records=RecordsSettings(enabled=False))
    with serve_app(create_app(example_site, settings)) as live:
        assert httpx.get(f"{live.base_url}/metrics").status_code == 404


def test_metrics_count_turns_latencies_provider_errors_caps_and_queues(
    example_site: Path, tmp_path: Path, receiver: WebhookReceiver
) -> None:
    with OpenAIChatServer([Fault("status", status=500)]) as llm:
        provider = ProviderSettings(kind="openai", base_url=llm.base_url, model="scripted-model",
                                    retries=0)
        settings = Settings(
            providers=(provider,),
            caps=LimitSettings(answers_per_minute=0, answers_per_minute_per_client=3),
            records=RecordsSettings(path=str(tmp_path / "records.sqlite3")),
            webhooks=WebhookSettings(urls=(receiver.url,), secret_env=SECRET_ENV,
                                     backoff_seconds=30.0),
            metrics=MetricsSettings(enabled=True, token_env=TOKEN_ENV),
        )
        with serve_app(create_app(example_site, settings)) as live, httpx.Client(
            base_url=live.base_url, timeout=60
        ) as client:
            assert client.get("/metrics").status_code == 401
            wrong = client.get("/metrics", headers={"Authorization": "Bearer nope"})
            assert wrong.status_code == 401
            passages = client.post("/api/ask", json={"question": COVERED}).json()
            refusal = client.post("/api/ask", json={"question": REFUSED[0]}).json()
            client.post("/api/ask", json={"question": "hello"})
            assert client.post("/api/ask", json={"question": "hi"}).status_code == 429
            # Three events wait in the outbox (the receiver is down, retries are 30 s off).
            receiver.wait_for(lambda r: len(r.deliveries) == 4)
            auth = {"Authorization": f"Bearer {TOKEN}"}
            deadline = time.monotonic() + 30
            while True:
                response = client.get("/metrics", headers=auth)
                assert response.status_code == 200
                found = samples(response.text)
                outbox = found.get(("docpilot_queue_depth", (("queue", "outbox"),)))
                if outbox == 4 or time.monotonic() > deadline:
                    break
                time.sleep(0.05)  # polled: the writer moves the spool into the outbox
    assert response.headers["content-type"].startswith("text/plain")
    assert passages["kind"] == "passages" and refusal["kind"] == "refusal"
    assert found[("docpilot_turns_total", (("kind", "passages"),))] == 1
    assert found[("docpilot_turns_total", (("kind", "refusal"),))] == 1
    assert found[("docpilot_turns_total", (("kind", "social"),))] == 1
    assert found[("docpilot_stage_seconds_count", (("stage", "total"),))] == 3
    assert found[("docpilot_stage_seconds_count", (("stage", "retrieval"),))] == 2
    errors = ("docpilot_provider_errors_total",
              (("kind", "status"), ("provider", "openai:scripted-model")))
    assert found[errors] == 1
    assert found[("docpilot_cap_hits_total", (("cap", "client"),))] == 1
    assert found[("docpilot_queue_depth", (("queue", "spool"),))] == 0
    assert outbox == 4  # question_asked x3 and no_answer x1
    assert COVERED not in response.text and REFUSED[0] not in response.text


def test_a_wrong_method_on_metrics_is_a_json_405_like_the_api(example_site: Path) -> None:
    settings = Settings(records=RecordsSettings(enabled=False),
                        metrics=MetricsSettings(enabled=True))
    with serve_app(create_app(example_site, settings)) as live:
        response = httpx.post(f"{live.base_url}/metrics", content=b"x")
    assert response.status_code == 405 and "GET" in response.headers["allow"]
    assert response.headers["content-type"] == "application/json"
    assert response.json()["error"]["field"] == "method"


def test_two_apps_in_one_process_keep_their_own_counts(example_site: Path) -> None:
    settings = Settings(records=RecordsSettings(enabled=False),
                        metrics=MetricsSettings(enabled=True))
    with (
        serve_app(create_app(example_site, settings)) as first,
        serve_app(create_app(example_site, settings)) as second,
    ):
        for _ in range(2):
            assert httpx.post(f"{first.base_url}/api/ask", json={"question": "hello"},
                              timeout=60).status_code == 200
        counted = [samples(httpx.get(f"{live.base_url}/metrics").text)
                   for live in (first, second)]
    social = ("docpilot_turns_total", (("kind", "social"),))
    assert counted[0][social] == 2
    assert social not in counted[1], "the other app's turns never show"
