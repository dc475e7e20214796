"""What the answer ladder is asked (`AnswerJob`) and what each rung can end with.

A provider's attempt ends with an `Answer` (validated, cited), or raises `Uncited` (it
answered, but nothing in its answer could be cited, or it said the excerpts do not cover
the question) or `NoAnswer` (no usable answer at all: why is in the message). Both carry
what the attempt used, so a failed call's tokens are recorded and counted.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from docpilot_runtime.answer.spend import SpendGate
from docpilot_runtime.check.validate import Piece
from docpilot_runtime.retrieve.site import Retrieval
from docpilot_runtime.settings.answer import AnswerSettings
from docpilot_runtime.shared.framing import ENGLISH, Framing
from docpilot_runtime.shared.types import Citation

Progress = Callable[[str, dict[str, Any]], Awaitable[None]]


@dataclass(frozen=True)
class AnswerJob:
    """What every provider on the ladder is asked: the turn's retrieval and words, where
    validated text and progress go, and the limits that bound the answer.

    ``deadline`` is the loop time by which the turn's model calls must end (the turn sets
    it from its first model call, a rewrite included); None: ``turn_deadline`` from now.
    ``earlier`` is the earlier question a follow-up refers to (the compact prompt's
    one line of context)."""

    retrieval: Retrieval
    question: str
    memory: str
    page: str | None
    settings: AnswerSettings
    http: httpx.AsyncClient | None
    emit_delta: Callable[[Piece], Awaitable[None]]
    progress: Progress
    framing: Framing = ENGLISH
    deadline: float | None = None
    earlier: str = ""
    spend: SpendGate | None = None  # each call holds its estimate of the day's spend


@dataclass
class Answer:
    """What a provider's validated answer contributes to the result."""

    markdown: str
    blocks: list[Any]
    citations: list[Citation]
    summary: str
    model_confidence: int | None
    actions: list[dict[str, Any]]
    tentative: bool
    usage: dict[str, Any]
    dropped_citations: list[str] = field(default_factory=list)
    delinked: list[str] = field(default_factory=list)
    # "markers": the model cited inline; "markers, re-attached": and the support check
    # moved a claim's citation to the excerpt that holds it; "check": it cited nothing,
    # and the support check (check/support.py) attached the excerpts that hold it.
    cited_by: str = "markers"


class NoAnswer(Exception):
    """The provider finished without a usable answer; the message says why."""


class Uncited(Exception):
    """The provider answered, but with nothing citable: no valid marker and no excerpt
    holding its content, or it said the excerpts do not cover the question."""

    def __init__(self, why: str, model_confidence: int | None = None) -> None:
        super().__init__(why)
        self.model_confidence = model_confidence
