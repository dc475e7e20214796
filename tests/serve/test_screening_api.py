"""The credential screening through the real HTTP API: secrets placed in `page` or in any
`history[]` field of a request to a running runtime (uvicorn) whose scripted Anthropic
provider records every request body must reach neither that provider nor any log line, and
the turn goes on; in `question` or `quote` they settle it as `credential` with no call.
The secrets and the request shapes are those of tests/screen/test_screening.py."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from docpilot_runtime.providers import ProviderSettings
from docpilot_runtime.serve.app import create_app
from docpilot_runtime.settings.load import Settings
from secrets_in_requests import PLACES, QUESTION, SECRETS, _body
from servers.anthropic_messages import AnthropicServer, answer_reply
from servers.asgi import in_process
from servers.runtime import NO_CAPS


@pytest.fixture
def all_logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """caplog at DEBUG on the root and on every logger that exists (uvicorn's and httpx's
    included: the test server leaves logging to the process)."""
    caplog.set_level(logging.DEBUG)
    for name in list(logging.root.manager.loggerDict):
        caplog.set_level(logging.DEBUG, logger=name)
    return caplog


@pytest.fixture
def scripted(example_site: Path) -> Iterator[tuple[AnthropicServer, httpx.Client]]:
    with AnthropicServer() as model:
        provider = ProviderSettings(
            kind="anthropic", base_url=model.base_url, model="anthropic-test-model"
        )
        settings = Settings(providers=(provider,), caps=NO_CAPS)
        with in_process(create_app(example_site, settings)) as client:
            yield model, client


def test_a_secret_in_page_or_history_never_reaches_the_provider_or_a_log(
    scripted: tuple[AnthropicServer, httpx.Client], all_logs: pytest.LogCaptureFixture
) -> None:
    model, client = scripted
    cases = [(name, place) for name in SECRETS for place in PLACES]
    for name, place in cases:
        text, fragment = SECRETS[name]
        # Enough steps for a retry; left-overs are served to the next turn, which is fine.
        model.script(*[answer_reply(markdown="Use `exclude: true` in front matter.")] * 2)
        seen = len(model.requests)
        response = client.post("/api/ask", json=_body(place, text))
        assert response.status_code == 200, (name, place)
        result = response.json()
        assert result["kind"] != "credential", (name, place)  # the turn went on
        assert len(model.requests) > seen, (name, place)  # and reached the model
        assert fragment not in json.dumps(result), (name, place)
    sent = json.dumps([request.body for request in model.requests])
    assert len(model.requests) >= len(cases)
    logged = "\n".join(
        f"{r.name} {r.getMessage()} {r.args!r} {r.exc_text or ''}" for r in all_logs.records
    )
    assert any(r.name.startswith("docpilot") for r in all_logs.records)  # the log was read
    leaked = [
        (name, where)
        for name, (_, fragment) in SECRETS.items()
        for where, haystack in (("provider", sent), ("log", logged))
        if fragment in haystack
    ]
    assert leaked == []


def test_a_secret_in_the_question_or_quote_reaches_nothing(
    scripted: tuple[AnthropicServer, httpx.Client], all_logs: pytest.LogCaptureFixture
) -> None:
    model, client = scripted
    for name, (text, fragment) in SECRETS.items():
        for body in ({"question": f"why does this fail? {text}"},
                     {"question": QUESTION, "quote": text}):
            result = client.post("/api/ask", json=body).json()
            assert result["kind"] == "credential", (name, body.keys())
            assert fragment not in json.dumps(result)
    assert model.requests == []
    assert not any(
        fragment in f"{r.getMessage()} {r.args!r}"
        for r in all_logs.records
        for _, fragment in SECRETS.values()
    )
