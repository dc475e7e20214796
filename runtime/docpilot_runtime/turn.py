"""One turn: the stages a question passes, in order, each able to end it.

1. credential check (no retrieval, no model, nothing logged),
2. social openers (a template, no retrieval),
3. hybrid retrieval and the refusal gate (below the threshold: a refusal with the
   closest pages, no model call),
4-6. (with providers) the primed model call, tools and validation, down the answer
   ladder; with none configured, or none answering, the turn settles as `passages`:
   the best excerpts, each cited.

`Runtime` holds the loaded sites (one bundle each) and answers `AskRequest`s; the HTTP
app, the CLI and the tests all go through `Runtime.ask`. A turn picks its `Site` once,
at its start, so a bundle swap (`bundle_swap`) never changes the bundle under it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import httpx

from docpilot_runtime.answer.ladder import AnswerJob, LadderOutcome, ask_providers, merge_usage
from docpilot_runtime.answer.memory import build_memory, render_memory
from docpilot_runtime.answer.rewrite import REWRITE_PASSED_FOLLOWUPS, rewrite_question
from docpilot_runtime.answer.second_opinion import second_opinion
from docpilot_runtime.check.validate import Piece
from docpilot_runtime.limits.caps import Caps, TurnSpend
from docpilot_runtime.providers import Provider, ProviderError, make_provider
from docpilot_runtime.records import Recorder, StageClock
from docpilot_runtime.records.schema import VerdictRecord
from docpilot_runtime.reply.results import (
    new_turn_id,
    opening_result,
    passages_result,
    refusal_result,
)
from docpilot_runtime.retrieve.site import Retrieval, Site, anchor_questions
from docpilot_runtime.settings.load import Settings
from docpilot_runtime.shared.framing import Framing
from docpilot_runtime.shared.paths import page_path
from docpilot_runtime.shared.types import AskRequest, FallbackReason, Result, TurnBasis
from docpilot_runtime.sites.source import BundleSource, load_sites

log = logging.getLogger("docpilot.turn")


@dataclass(frozen=True)
class Event:
    """A server-sent event: `progress`, `delta`, `answer` or `error`."""

    name: str
    data: dict[str, Any]


EventSink = Callable[[Event], Awaitable[None]]


class TurnObserver(Protocol):
    """What counts turns and cap hits (the app's Prometheus metrics, `serve.metrics`)."""

    def observe_turn(self, kind: str, latency_ms: Mapping[str, float]) -> None: ...

    def cap_hit(self, cap: str) -> None: ...


async def _ignore(_event: Event) -> None:
    return None


@dataclass
class Runtime:
    """Every site this runtime answers for, picked per request by the page path."""

    sites: list[Site]
    settings: Settings = field(default_factory=Settings)
    providers: list[Provider] = field(default_factory=list)
    http: httpx.AsyncClient | None = None  # for site tools; made when a site declares any
    recorder: Recorder | None = None  # set by the app while it serves; None records nothing
    metrics: TurnObserver | None = None  # set by the app; counts turns and stage latencies
    caps: Caps | None = None  # set by the app; second opinions count against its daily spend
    # Second opinions still being asked (after their turns were answered).
    _checks: set[asyncio.Task[None]] = field(default_factory=set, repr=False)
    source: BundleSource | None = None  # where `sites` came from, for a reload (bundle_swap)

    def __post_init__(self) -> None:
        if self.http is None and any(site.bundle.tools for site in self.sites):
            self.http = httpx.AsyncClient()

    async def _answer(
        self,
        request: AskRequest,
        retrieval: Retrieval,
        emit: EventSink,
        framing: Framing,
        deadline: float | None,
        spend: TurnSpend | None = None,
    ) -> LadderOutcome:
        async def delta(piece: Piece) -> None:
            # Newly validated blocks (append text and tree), then the validated draft of
            # the block still open (replaces the previous draft).
            data = {"text": piece.markdown, "blocks": piece.blocks, "draft": piece.draft}
            await emit(Event("delta", data))

        async def progress(stage: str, data: dict[str, Any]) -> None:
            await emit(Event("progress", {"stage": stage, **data}))

        await progress("answer", {"message": framing.writing})
        anchors = anchor_questions(request.history)
        job = AnswerJob(
            retrieval=retrieval,
            question=request.question,
            memory=render_memory(build_memory(request.history, request.quote)),
            page=request.page,
            settings=self.settings.answer,
            http=self.http,
            emit_delta=delta,
            progress=progress,
            framing=framing,
            deadline=deadline,
            earlier=anchors[-1] if anchors else "",
            spend=spend,
        )
        return await ask_providers(self.providers, job)

    async def rewritten_retrieval(
        self, request: AskRequest, retrieval: Retrieval, site: Site,
        spend: TurnSpend | None = None,
    ) -> tuple[Retrieval, dict[str, Any] | None, float | None]:
        """Stage 3 again on a model's standalone rewrite of a follow-up or of a question
        in another language (``answer.rewrite``): the retrieval, the call's usage, and the
        turn's deadline, which starts with that first model call."""
        reason = site.rewrite_reason(request)
        if reason == "follow-up" and retrieval.passed and not retrieval.rescued:
            reason = reason if REWRITE_PASSED_FOLLOWUPS else ""
        if not reason:
            return retrieval, None, None
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = started + self.settings.answer.turn_deadline
        # At most a third of the turn's time: the answer needs the rest.
        share = started + self.settings.answer.turn_deadline / 3
        rewrite = await rewrite_question(
            self.providers[0],
            request.question,
            anchor_questions(request.history),
            site.language or "en",
            share,
            spend,
        )
        if rewrite is None:
            return retrieval, None, deadline
        if rewrite.text:
            log.info("question rewritten (%s) for search: %r", reason, rewrite.text)
            retrieval = await asyncio.to_thread(
                site.retrieve_rewritten, request, rewrite.text, retrieval
            )
        return retrieval, rewrite.usage, deadline

    async def settle(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for second opinions still being asked, then
        cancel the rest (their turns stay without a verdict)."""
        if self._checks:
            _done, late = await asyncio.wait(set(self._checks), timeout=timeout)
            for task in late:
                task.cancel()

    async def aclose(self) -> None:
        """Close the providers' and site tools' HTTP clients."""
        await self.settle(0)
        for provider in self.providers:
            await provider.aclose()
        if self.http is not None:
            await self.http.aclose()

    def site_for(self, page: str | None) -> Site:
        """The site whose mount prefix is the longest one the page path starts with."""
        if page:
            path = page_path(page)
            matches = [s for s in self.sites if path.startswith(s.prefix)]
            if matches:
                return max(matches, key=lambda s: len(s.prefix))
        return min(self.sites, key=lambda s: len(s.prefix))

    def health(self) -> dict[str, Any]:
        root = self.site_for(None)
        return {
            "status": "ok",
            **root.describe(),
            "sites": [s.describe() for s in self.sites],
        }

    async def ask(
        self,
        request: AskRequest,
        emit: EventSink | None = None,
        *,
        models: bool = True,
        site: Site | None = None,
    ) -> Result:
        """Run one turn; progress goes to ``emit``; the returned Result is authoritative.
        ``models=False`` (the spend cap reached) settles above the gate as `passages`.
        ``site`` picks the bundle instead of the reader's page (the MCP tools' `site`).
        With a recorder, the turn is spooled (on disk) before this returns."""
        clock = StageClock()
        site = site or self.site_for(request.page)
        result = await self._turn(request, clock.wrap(emit or _ignore), models, site)
        latency = clock.finish()
        check = self._checked(result, site) if self.recorder is not None and models else None
        if self.recorder is not None:
            await self.recorder.record(result, request, latency, awaits_verdict=bool(check))
        if self.metrics is not None:
            self.metrics.observe_turn(result.kind, latency)
        if check:  # after the reader has the answer: a task, never awaited by the turn
            task = asyncio.create_task(self._second_opinion(result, check))
            self._checks.add(task)
            task.add_done_callback(self._checks.discard)
        return result

    def _checked(self, result: Result, site: Site) -> list[tuple[str, str]]:
        """The cited passages (title, text) when this answer gets a second opinion."""
        options = self.settings.second_opinion
        if not self.providers or not options.applies(result.kind, result.confidence):
            return []
        units = {unit.id: unit for unit in site.bundle.units}
        cited = [units[c.id] for c in result.citations if c.id in units]
        return [(" > ".join([*u.breadcrumb, u.title]) if u.breadcrumb else u.title, u.text)
                for u in cited]

    async def _second_opinion(self, result: Result, passages: list[tuple[str, str]]) -> None:
        options = self.settings.second_opinion
        provider = self.providers[min(options.provider, len(self.providers) - 1)]
        try:
            if self.caps is not None and await self.caps.spend_exhausted():
                return  # the day's spend is used up: no call, the turn keeps no verdict
            opinion = await second_opinion(
                provider, result.markdown, passages, options.max_tokens
            )
            if opinion is not None and self.caps is not None:
                await self.caps.record_spend(opinion.cost_micro_usd)
        except Exception as exc:  # never let a check's failure reach the loop's log as text
            log.warning("second opinion failed: %s", type(exc).__name__)
            return
        if opinion is not None and opinion.verdict is not None and self.recorder is not None:
            record = VerdictRecord(
                result.turn_id, opinion.verdict, opinion.model, opinion.cost_micro_usd
            )
            await self.recorder.verdict(record)

    async def _turn(
        self, request: AskRequest, emit: EventSink, models: bool, site: Site
    ) -> Result:
        opening_basis = TurnBasis(new_turn_id(), site.bundle.hash)

        # 1-2. A pasted credential, then a purely social message, end the turn before
        # anything else sees the text.
        templates = self.settings.social_templates
        opening, request = opening_result(request, site.name, templates, opening_basis)
        if opening is not None:
            return opening

        # 3. Retrieval and the gate.
        # Off the event loop: a hosted query embedder is a blocking HTTP call.
        retrieval = await asyncio.to_thread(site.retrieve, request)
        # Each model call (the rewrite's too) holds its estimate of the day's spend first
        # (caps.TurnSpend).
        spend = TurnSpend(self.caps) if self.caps is not None else None
        usage: dict[str, Any] | None = None
        deadline: float | None = None
        if self.providers and models and self.settings.answer.rewrite:
            retrieval, usage, deadline = await self.rewritten_retrieval(
                request, retrieval, site, spend
            )
        framing = retrieval.framing(request.lang)  # the page's, or the question's own
        progressed = retrieval.progress(framing)
        await emit(Event("progress", {"stage": "retrieval", "message": progressed}))
        basis = retrieval.basis(opening_basis)
        if not retrieval.passed:
            refused = refusal_result(site.name, retrieval.closest_pages(), basis, framing)
            refused.usage = usage  # a rewrite call is counted like any other
            return refused

        # 4-6. A model, primed with the gate's excerpts, through the answer ladder.
        fallback: FallbackReason | None = None
        if self.providers and models:
            outcome = await self._answer(request, retrieval, emit, framing, deadline, spend)
            usage = merge_usage(usage, outcome.usage)
            answered = outcome.answer
            if answered is not None:
                return Result.of(
                    "answer",
                    answered.markdown,
                    basis,
                    blocks=answered.blocks,
                    citations=answered.citations,
                    tentative=answered.tentative,
                    model_confidence=answered.model_confidence,
                    actions=answered.actions,
                    summary=answered.summary,
                    usage=usage,
                    checks={
                        "cited_by": answered.cited_by,
                        "ids_stripped": list(answered.dropped_citations),
                        "links_delinked": list(answered.delinked),
                    },
                )
            if outcome.uncited:
                # An answer with nothing citable is never shown: a refusal.
                refused = refusal_result(
                    site.name,
                    retrieval.closest_pages(),
                    basis,
                    framing,
                    model_confidence=outcome.model_confidence,
                    usage=usage,
                )
                refused.fallback_reason = "uncited"
                return refused
            ended = [a.get("outcome") for a in outcome.attempts]
            fallback = "turn_deadline" if "deadline" in ended else "models_failed"

        # Above the gate with no model (or none answered): the best excerpts, each cited.
        result = passages_result(request.question, retrieval.shown_units(), basis, framing)
        result.usage = usage
        result.fallback_reason = "spend_cap" if spend is not None and spend.refused else fallback
        return result


def load_runtime(site_dir: str | Path, settings: Settings | None = None) -> Runtime:
    """Load every bundle the source lists (the site folder's manifests and bundles, or
    `[bundle] url`) once; raises BundleError with the file or URL named."""
    settings = settings or Settings()
    source, sites = load_sites(site_dir, settings.bundle, settings.embedder)
    providers = []
    for configured in settings.providers:
        try:
            providers.append(make_provider(configured))
        except ProviderError as exc:
            log.warning("provider %s:%s skipped: %s", configured.kind, configured.model, exc)
    return Runtime(sites=sites, settings=settings, providers=providers, source=source)
