"""The numpy-free part of stages 1-3, shared by the server and the browser's static mode.

One owner for each rule, so the two answer alike (``tests/test_static_assets.py`` holds
them equal): the opening stages (credential, social), the lexical signals the gate
reads, the composed follow-up, the reader's page first, the ranked list, the closest
pages, and the refusal and passages results.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from .credentials import credential_reply, find_credential
from .gate import margin
from .lexical import StoredIndex, ceiling_floor, idf, term_ceiling
from .markdown_tree import to_markdown
from .memory import COMPLETED_KINDS
from .passages import passages_blocks
from .refusal import refusal_blocks
from .social import match_social
from .types import AskRequest, Citation, HistoryItem, PageRef, Result

CHANNEL_DEPTH = 50  # units each channel contributes to the fusion
POOL = 30  # fused units kept for the answer and the closest pages
ANSWER_UNITS = 4  # excerpts a `passages` answer quotes
PAGE_UNITS = 2  # units of the reader's page put first
CLOSEST_PAGES = 5  # pages a refusal lists
MIN_RANKED = 10  # `ranked` lists at least this many units where the corpus has them


class UnitLike(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def url(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def page(self) -> int: ...


class PageLike(Protocol):
    @property
    def url(self) -> str: ...
    @property
    def title(self) -> str: ...


def opening_result(
    request: AskRequest,
    site_name: str,
    templates: Mapping[str, Mapping[str, str]] | None,
    base: Mapping[str, Any],
) -> Result | None:
    """Stages 1 and 2: a pasted credential, then a purely social message, end the turn."""
    found = find_credential(request.question)
    if found is None and request.quote:
        found = find_credential(request.quote)
    if found is not None:
        return Result(
            kind="credential",
            markdown=credential_reply(found),
            credential_kind=found.kind,
            **base,
        )
    social = match_social(request.question, site_name, templates)
    if social is not None:
        return Result(kind="social", markdown=social.markdown, **base)
    return None


def lexical_signals(
    index: StoredIndex, terms: Sequence[str], hits: Sequence[tuple[int, float]]
) -> tuple[float, float]:
    """(strength, margin) of a BM25+ list: the best score over the most the terms could
    score (never under ``ceiling_floor``), and best minus the mean of the next four,
    over best."""
    ceiling = max(
        sum(
            term_ceiling(idf(index.count, index.document_frequency(t)))
            for t in dict.fromkeys(terms)
        ),
        ceiling_floor(index.count),
    )
    if not hits or ceiling <= 0:
        return 0.0, 0.0
    scores = [s for _, s in hits]
    return min(scores[0] / ceiling, 1.0), margin(scores, 4) / scores[0]


def composed_question(history: Sequence[HistoryItem], question: str) -> str | None:
    """The follow-up composed with the last *answered* question (and the one before it
    when that turn was itself rescued by this channel); refused turns never anchor it."""
    answered = [h for h in history if h.kind in COMPLETED_KINDS]
    if not answered:
        return None
    last = answered[-1]
    parts = [last.question]
    if last.rescued and len(answered) > 1:
        parts.insert(0, answered[-2].question)
    return " ".join([*parts, question])


def page_first(
    page: str,
    prefix: str,
    page_units: Mapping[str, Sequence[int]],
    order: Sequence[int],
    lexical: Sequence[tuple[int, float]],
) -> list[int]:
    """The reader's current page's two closest units, to be put first whatever their
    score (they never count toward confidence, which is computed before)."""
    path = page.split("#", 1)[0].split("?", 1)[0]
    if prefix != "/" and path.startswith(prefix):
        path = "/" + path[len(prefix) :]
    candidates = page_units.get(path) or page_units.get(path.rstrip("/") + "/")
    if not candidates:
        return []
    rank = {u: i for i, u in enumerate(order)}
    lexical_rank = {u: i for i, (u, _) in enumerate(lexical)}
    best = sorted(
        candidates,
        key=lambda u: (rank.get(u, len(rank)), lexical_rank.get(u, len(lexical_rank)), u),
    )
    return best[:PAGE_UNITS]


def with_page_first(first: Sequence[int], order: Sequence[int]) -> list[int]:
    return [*first, *(u for u in order if u not in first)]


def ranked_ids(
    ordered: Sequence[int], lexical: Sequence[tuple[int, float]], units: Sequence[UnitLike]
) -> list[str]:
    """Unit ids best first, topped up from the lexical list to at least MIN_RANKED."""
    order = list(ordered)
    seen = set(order)
    for unit, _ in lexical:
        if len(order) >= MIN_RANKED:
            break
        if unit not in seen:
            order.append(unit)
            seen.add(unit)
    return [units[u].id for u in order]


def closest_pages(
    ordered: Sequence[int], units: Sequence[UnitLike], pages: Sequence[PageLike]
) -> list[PageRef]:
    """The distinct pages of the best units, up to CLOSEST_PAGES."""
    found: list[PageRef] = []
    seen: set[int] = set()
    for unit in ordered:
        index = units[unit].page
        if index not in seen:
            seen.add(index)
            found.append(PageRef(url=pages[index].url, title=pages[index].title))
        if len(found) >= CLOSEST_PAGES:
            break
    return found


def refusal_result(site_name: str, closest: list[PageRef], common: Mapping[str, Any]) -> Result:
    blocks = refusal_blocks(site_name, closest)
    return Result(
        kind="refusal", markdown=to_markdown(blocks), blocks=blocks, closest=closest, **common
    )


def passages_result(question: str, units: Sequence[UnitLike], common: Mapping[str, Any]) -> Result:
    """Above the gate with no model answer: the best excerpts, each cited."""
    blocks = passages_blocks(question, units)
    citations = [Citation(n=i + 1, id=u.id, url=u.url, title=u.title) for i, u in enumerate(units)]
    return Result(
        kind="passages",
        markdown=to_markdown(blocks),
        blocks=blocks,
        citations=citations,
        **common,
    )
