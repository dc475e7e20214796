"""Stages 4-6 over the providers: the answer ladder.

Each provider in order gets one attempt (`attempt.ProviderRun`) until one answers with
citations. A provider that times out, fails, sends malformed output or no usable answer
(`NoAnswer`), or answers with nothing citable (`Uncited`), hands the turn to the next
one; the whole ladder is bounded by the turn deadline. The outcome says which happened:
an answer; no answer but a model that answered without citations (the turn becomes a
refusal); or nothing (the turn settles as `passages`). Every attempt's tokens and cost,
failed ones included, are summed into the outcome's usage, so records and the spend cap
count what was really used, and each attempt is logged with its cause.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from docpilot_runtime.answer.attempt import ProviderRun
from docpilot_runtime.answer.job import Answer, AnswerJob, NoAnswer, Uncited
from docpilot_runtime.answer.spend import SpendCapReached
from docpilot_runtime.providers import Provider, ProviderError

__all__ = ["Answer", "AnswerJob", "LadderOutcome", "ask_providers", "merge_usage"]

log = logging.getLogger("docpilot.answer")

_TOKEN_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cost_micro_usd",
)


@dataclass
class LadderOutcome:
    """How the ladder ended: ``answer`` when a provider answered with citations; else
    ``uncited`` when one answered with nothing citable (a refusal after the model).
    ``usage`` sums every attempt (None when no call was made); ``attempts`` lists them."""

    answer: Answer | None = None
    uncited: bool = False
    model_confidence: int | None = None
    usage: dict[str, Any] | None = None
    attempts: list[dict[str, Any]] = field(default_factory=list)


def merge_usage(
    first: dict[str, Any] | None, second: dict[str, Any] | None
) -> dict[str, Any] | None:
    """Two usage records as one: tokens, cost and steps summed; provider and model the
    second's (the call that settled the turn); attempts kept in order."""
    if first is None or second is None:
        return second if first is None else first
    merged = dict(second)
    for key in (*_TOKEN_FIELDS, "steps"):
        merged[key] = int(first.get(key) or 0) + int(second.get(key) or 0)
    merged["attempts"] = [*first.get("attempts", []), *second.get("attempts", [])]
    return merged


def _attempt(run: ProviderRun, outcome: str, cause: str = "") -> dict[str, Any]:
    record = run.usage_record()
    return {
        "provider": record["provider"],
        "model": record["model"],
        "outcome": outcome,
        "cause": cause,
        "steps": record["steps"],
        **{key: record[key] for key in _TOKEN_FIELDS},
    }


async def ask_providers(providers: Sequence[Provider], job: AnswerJob) -> LadderOutcome:
    """The answer ladder: each provider in order until one answers with citations, within
    the turn's deadline (past it, the provider being asked is abandoned)."""
    loop = asyncio.get_running_loop()
    settings = job.settings
    deadline = job.deadline if job.deadline is not None else loop.time() + settings.turn_deadline
    outcome = LadderOutcome()
    for position, provider in enumerate(providers):
        run = ProviderRun(provider, job)
        try:
            async with asyncio.timeout_at(deadline):
                answer = await run.run()
        except TimeoutError:
            log.warning(
                "provider %s still answering at the turn deadline (%gs, turn_deadline); "
                "the turn settles without it",
                provider.name,
                settings.turn_deadline,
            )
            _record(outcome, _attempt(run, "deadline", "the turn deadline passed"))
            return outcome
        except Uncited as exc:
            log.warning("provider %s answered without citations (%s)", provider.name, exc)
            outcome.uncited = True
            outcome.model_confidence = exc.model_confidence
            _record(outcome, _attempt(run, "uncited", str(exc)))
        except SpendCapReached:
            # No provider may be called: the caller settles as passages (spend_cap).
            _record(outcome, _attempt(run, "failed", "the day's spend cap"))
            return outcome
        except (ProviderError, NoAnswer, httpx.HTTPError) as exc:
            cause = str(exc) or exc.__class__.__name__
            log.warning(
                "provider %s gave no answer (%s: %s)", provider.name, type(exc).__name__, cause
            )
            _record(outcome, _attempt(run, "failed", f"{type(exc).__name__}: {cause}"))
        else:
            attempt = _attempt(run, "answer")
            _record(outcome, attempt)
            answer.usage = dict(outcome.usage or {})
            outcome.answer = answer
            return outcome
        if position < len(providers) - 1:
            await job.progress("answer", {"message": job.framing.another_model})
    return outcome


def _record(outcome: LadderOutcome, attempt: dict[str, Any]) -> None:
    outcome.attempts.append(attempt)
    usage = {key: attempt[key] for key in ("provider", "model", "steps", *_TOKEN_FIELDS)}
    usage["attempts"] = [attempt]
    outcome.usage = merge_usage(outcome.usage, usage)
