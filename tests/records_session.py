"""A scripted session of mixed turns through a real uvicorn runtime with records on: an
answer (from a scripted OpenAI-compatible provider), refusals, passages (the provider
fails), a pasted credential, a greeting, and a thumbs-down. Shared by the record tests
and the report's browser test."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from docpilot_runtime.providers import ProviderSettings
from docpilot_runtime.records import RecordsSettings
from docpilot_runtime.serve.app import create_app
from docpilot_runtime.settings.load import Settings
from docpilot_runtime.shared.types import AskRequest
from docpilot_runtime.sites.loader import load_site
from servers.anthropic_messages import Fault, answer_reply
from servers.openai_chat import OpenAIChatServer
from servers.runtime import serve_app

COVERED = "How do I exclude a page from the assistant?"
REFUSED = (
    "What is the best recipe for sourdough bread?",
    "Is there a good sourdough bread recipe?",
    "How tall is Mount Everest?",
)
SECRET = "ghp_" + "Q7rT2mXk9LpV4nB8cW1zY6hJ3dF5sA0gE" + "u2"
CREDENTIAL = f"my token is {SECRET} why does it fail"
NOTE = "It cited the wrong page entirely"


@dataclass(frozen=True)
class Session:
    """The turn ids the session produced, by what each turn was."""

    answer: str
    passages: str
    refusals: tuple[str, ...]
    credential: str
    social: str
    bundle_hash: str
    results: dict[str, dict[str, Any]]


def _ask(client: httpx.Client, question: str, stream: bool = False) -> dict[str, Any]:
    if not stream:
        response = client.post("/api/ask", json={"question": question})
        assert response.status_code == 200, response.text
        result: dict[str, Any] = response.json()
        return result
    with client.stream(
        "POST", "/api/ask", json={"question": question}, headers={"Accept": "text/event-stream"}
    ) as response:
        assert response.status_code == 200
        event, answer = "", None
        for line in response.iter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: ") and event == "answer":
                import json

                answer = json.loads(line[6:])
    assert answer is not None, "the stream ended without an answer event"
    return answer


def run_session(site: Path, records: RecordsSettings) -> Session:
    """Run the session; returns once the runtime has stopped (records written)."""
    unit_id = load_site(site, "/").retrieve(AskRequest(COVERED)).shown_units()[0].id
    with OpenAIChatServer([answer_reply(markdown=f"Set `docpilot: exclude` [[{unit_id}]].")]) as llm:
        provider = ProviderSettings(
            kind="openai", base_url=llm.base_url, model="scripted-model", retries=0
        )
        settings = Settings(providers=(provider,), records=records)
        with serve_app(create_app(site, settings)) as live, httpx.Client(
            base_url=live.base_url, timeout=60
        ) as client:
            answer = _ask(client, COVERED, stream=True)
            llm.script(Fault("status", status=500))
            passages = _ask(client, COVERED)
            refusals = [_ask(client, q) for q in REFUSED]
            credential = _ask(client, CREDENTIAL, stream=True)
            social = _ask(client, "hello")
            feedback = {"turn_id": answer["turn_id"], "rating": "down",
                        "reasons": ["incorrect"], "note": NOTE}
            assert client.post("/api/feedback", json=feedback).status_code == 204
            bundle_hash = client.get("/api/health").json()["bundle_hash"]
    kinds = [answer["kind"], passages["kind"], credential["kind"], social["kind"]]
    assert kinds == ["answer", "passages", "credential", "social"], kinds
    assert [r["kind"] for r in refusals] == ["refusal"] * len(REFUSED)
    results = {r["turn_id"]: r for r in [answer, passages, *refusals, credential, social]}
    return Session(
        answer=answer["turn_id"],
        passages=passages["turn_id"],
        refusals=tuple(r["turn_id"] for r in refusals),
        credential=credential["turn_id"],
        social=social["turn_id"],
        bundle_hash=bundle_hash,
        results=results,
    )
