"""Running one real turn (`Runtime.ask`) against scripted providers, for the answer tests."""

from __future__ import annotations

import asyncio
from typing import Any

from docpilot_runtime.providers import ProviderSettings, make_provider
from docpilot_runtime.retrieve.site import Site
from docpilot_runtime.settings.answer import AnswerSettings
from docpilot_runtime.settings.load import Settings
from docpilot_runtime.shared.types import AskRequest, Result
from docpilot_runtime.turn import Event, Runtime

QUESTION = "How do I exclude a page from the assistant?"


def provider_settings(kind: str, server: Any, **extra: Any) -> ProviderSettings:
    """A provider of ``kind`` pointed at a scripted server."""
    return ProviderSettings(
        kind=kind, base_url=server.base_url, model=f"{kind}-test-model", **extra
    )


def run(
    site: Site,
    providers: list[ProviderSettings],
    request: AskRequest,
    answer: AnswerSettings | None = None,
) -> tuple[Result, list[Event]]:
    """One turn: its result and every event it emitted, in order."""

    async def go() -> tuple[Result, list[Event]]:
        events: list[Event] = []

        async def emit(event: Event) -> None:
            events.append(event)

        runtime = Runtime(
            sites=[site],
            settings=Settings(answer=answer or AnswerSettings()),
            providers=[make_provider(p) for p in providers],
        )
        try:
            result = await runtime.ask(request, emit)
        finally:
            await runtime.aclose()
        return result, events

    return asyncio.run(go())


def deltas(events: list[Event]) -> list[Event]:
    return [e for e in events if e.name == "delta"]
