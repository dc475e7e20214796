"""The results a turn ends with when no model answers: openings, refusals, passages.

Stages 1 and 2 (a credential, a social opener) end a turn before retrieval; above the
gate with no model, the turn settles as ``passages``. `ask_without_model` is the whole
model-free turn: static mode answers with it, and the server's turn (`turn.Runtime`)
runs the same steps around its model.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from docpilot_runtime.bundle.schema import UnitRecord
from docpilot_runtime.reply.passages import page_title_of, passages_blocks, preview
from docpilot_runtime.reply.refusal import refusal_blocks
from docpilot_runtime.retrieve.site import Site
from docpilot_runtime.screen.credentials import credential_reply, screen_request
from docpilot_runtime.screen.social import match_social
from docpilot_runtime.shared.framing import ENGLISH, Framing, framing_for
from docpilot_runtime.shared.markdown_tree import to_markdown
from docpilot_runtime.shared.types import AskRequest, Citation, PageRef, Result, TurnBasis


def opening_result(
    request: AskRequest,
    site_name: str,
    templates: Mapping[str, Mapping[str, str]] | None,
    basis: TurnBasis,
) -> tuple[Result | None, AskRequest]:
    """Stages 1 and 2: a pasted credential, then a purely social message, end the turn.

    Returns the result that ends the turn (or None) and the request the turn goes on with:
    `screen_request` has dropped a page or history item that carried a credential."""
    screened = screen_request(request)
    request = screened.request
    found = screened.credential
    if found is not None:
        reply = credential_reply(found, framing_for(request.lang))
        return Result.of("credential", reply, basis, credential_kind=found.kind), request
    social = match_social(request.question, site_name, templates)
    if social is not None:
        return Result.of("social", social.markdown, basis), request
    return None, request


def refusal_result(
    site_name: str,
    closest: list[PageRef],
    basis: TurnBasis,
    framing: Framing = ENGLISH,
    *,
    model_confidence: int | None = None,
    usage: dict[str, Any] | None = None,
) -> Result:
    """Below the gate, or a model answer with no surviving citation: the closest pages."""
    blocks = refusal_blocks(site_name, closest, framing)
    return Result.of(
        "refusal",
        to_markdown(blocks),
        basis,
        blocks=blocks,
        closest=closest,
        model_confidence=model_confidence,
        usage=usage,
    )


def passages_result(
    question: str,
    units: Sequence[UnitRecord],
    basis: TurnBasis,
    framing: Framing = ENGLISH,
) -> Result:
    """Above the gate with no model answer: the best excerpts, each cited."""
    blocks = passages_blocks(question, units, framing)
    citations = []
    for n, u in enumerate(units, start=1):
        page_title = page_title_of(u.title, u.breadcrumb)
        citations.append(Citation(n, u.id, u.url, u.title, page_title, preview(u.text)))
    return Result.of("passages", to_markdown(blocks), basis, blocks=blocks, citations=citations)


def new_turn_id() -> str:
    return uuid.uuid4().hex


def ask_without_model(
    site: Site,
    request: AskRequest,
    templates: Mapping[str, Mapping[str, str]] | None = None,
    turn_id: Callable[[], str] = new_turn_id,
) -> Result:
    """A whole turn with no model: stages 1-3, then ``passages`` or a ``refusal``. Static
    mode answers with this; the server's turn runs the same steps around its model."""
    opening_basis = TurnBasis(turn_id(), site.bundle.hash)
    opening, request = opening_result(request, site.name, templates, opening_basis)
    if opening is not None:
        return opening
    retrieval = site.retrieve(request)
    basis = retrieval.basis(opening_basis)
    framing = retrieval.framing(request.lang)
    if not retrieval.passed:
        return refusal_result(site.name, retrieval.closest_pages(), basis, framing)
    return passages_result(request.question, retrieval.shown_units(), basis, framing)
