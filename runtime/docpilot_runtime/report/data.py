"""The owner's report as data: what readers asked that the docs did not answer, grouped
into the pages to write next; what was cited; rates, confidence and cost over time.

Pure functions over the stored turns (`RecordStore.turns()` dicts), so tests can feed
them rows directly. Similar questions are grouped greedily by the content terms they
share, through the project's one tokenizer.
"""

from __future__ import annotations

import re
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from docpilot_runtime.retrieve.tokenize import search_terms, tokenize

_WORDS = re.compile(r"[^\W_]+(?:[-_./:][^\W_]+)*")
SIMILAR_AT = 0.34  # Jaccard overlap of content terms at which two questions group
DAY_MS = 86_400_000


@dataclass(frozen=True)
class Unanswered:
    """One turn the docs did not answer well, and why it is on the list."""

    turn_id: str
    question: str | None  # None when it was not stored (credential, no consent)
    why: str  # "refusal", "tentative", "thumbs down"
    closest: tuple[dict[str, str], ...]
    created_ms: int


@dataclass(frozen=True)
class QuestionGroup:
    """Questions that share content terms: one page the docs are missing."""

    label: str  # the terms the group shares, best first
    questions: tuple[str, ...]  # distinct questions, most asked first
    count: int  # turns in the group
    whys: dict[str, int]
    closest: tuple[dict[str, str], ...]  # the pages the gate found nearest, most often first


@dataclass(frozen=True)
class PageCount:
    url: str
    title: str
    count: int


@dataclass(frozen=True)
class Day:
    """One UTC day of turns."""

    date: str  # YYYY-MM-DD
    turns: int
    answered: int  # answer or passages
    refused: int
    other: int  # social, credential
    mean_confidence: float | None
    cost_micro_usd: int


@dataclass(frozen=True)
class ReportData:
    since_ms: int
    until_ms: int
    turns: int
    kinds: dict[str, int]
    unanswered: tuple[Unanswered, ...]
    groups: tuple[QuestionGroup, ...]
    by_closest_page: tuple[PageCount, ...]
    most_cited: tuple[PageCount, ...]
    days: tuple[Day, ...]
    confidence_points: tuple[tuple[int, int], ...]  # (created_ms, confidence), oldest first
    verdicts: dict[str, int]
    verdict_turns: tuple[dict[str, Any], ...] = field(default=())
    cost_micro_usd: int = 0
    feedback: dict[str, int] = field(default_factory=dict)

    @property
    def answer_rate(self) -> float:
        asked = self.kinds.get("answer", 0) + self.kinds.get("passages", 0)
        gated = asked + self.kinds.get("refusal", 0)
        return asked / gated if gated else 0.0

    @property
    def refusal_rate(self) -> float:
        gated = sum(self.kinds.get(k, 0) for k in ("answer", "passages", "refusal"))
        return self.kinds.get("refusal", 0) / gated if gated else 0.0


def content_terms(question: str) -> frozenset[str]:
    """The subject-carrying tokens of a question (the shared tokenizer, less function words)."""
    return frozenset(search_terms(question))


def why_unanswered(turn: dict[str, Any]) -> str | None:
    """Why a stored turn belongs on the unanswered list, or None when it does not."""
    feedback = turn.get("feedback")
    if feedback and feedback.get("rating") == "down":
        return "thumbs down"
    if turn["kind"] == "refusal":
        return "refusal"
    if turn["kind"] == "answer" and turn.get("tentative"):
        return "tentative"
    return None


def group_questions(items: list[Unanswered]) -> list[QuestionGroup]:
    """Greedy clustering: each question joins the first group whose terms overlap its own
    by `SIMILAR_AT` (Jaccard), else starts one; groups come out largest first."""
    clusters: list[tuple[set[str], list[Unanswered]]] = []
    withheld: list[Unanswered] = []
    asked = Counter(i.question for i in items if i.question)
    ordered = sorted(items, key=lambda i: (-asked.get(i.question or "", 0), i.created_ms))
    for item in ordered:
        if not item.question:
            withheld.append(item)
            continue
        terms = set(content_terms(item.question)) or {item.question.casefold().strip()}
        for seed, members in clusters:
            if len(seed & terms) / len(seed | terms) >= SIMILAR_AT:
                members.append(item)
                break
        else:
            clusters.append((terms, [item]))
    groups = [_group(members) for _, members in clusters]
    if withheld:
        groups.append(_group(withheld, label="(question not stored)"))
    return sorted(groups, key=lambda g: (-g.count, g.label))


def _surface_words(questions: list[str]) -> dict[str, str]:
    """Each content term as a reader wrote it ("recip" -> "recipe"), for group labels."""
    words: dict[str, str] = {}
    for question in questions:
        for word in _WORDS.findall(question):
            for term in tokenize(word):
                words.setdefault(term, word.casefold())
    return words


def _group(members: list[Unanswered], label: str | None = None) -> QuestionGroup:
    terms: Counter[str] = Counter()
    for item in members:
        if item.question:
            terms.update(content_terms(item.question))
    shared = [t for t, n in terms.most_common() if n == len(members)] or [
        t for t, _ in terms.most_common(3)
    ]
    spelled = _surface_words([i.question for i in members if i.question])
    shared = [spelled.get(term, term) for term in shared]
    questions = Counter(i.question for i in members if i.question)
    pages = _page_counts(page for i in members for page in i.closest[:1])
    return QuestionGroup(
        label=label or " · ".join(shared[:4]),
        questions=tuple(q for q, _ in questions.most_common()),
        count=len(members),
        whys=dict(Counter(i.why for i in members)),
        closest=tuple({"url": p.url, "title": p.title} for p in pages[:3]),
    )


def _page_counts(pages: Any) -> list[PageCount]:
    counts: Counter[str] = Counter()
    titles: dict[str, str] = {}
    for page in pages:
        counts[page["url"]] += 1
        if page.get("title"):
            titles.setdefault(page["url"], page["title"])
    return [PageCount(url, titles.get(url, ""), n) for url, n in counts.most_common()]


def _date(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d")


def build_report(
    turns: list[dict[str, Any]], since_ms: int, until_ms: int | None = None
) -> ReportData:
    """The report over ``turns`` (stored-turn dicts, any order) created since ``since_ms``."""
    until = until_ms if until_ms is not None else int(time.time() * 1000)
    turns = sorted(
        (t for t in turns if since_ms <= t["created_ms"] <= until),
        key=lambda t: t["created_ms"],
    )
    unanswered = []
    for turn in turns:
        why = why_unanswered(turn)
        if why is not None:
            unanswered.append(
                Unanswered(
                    turn["turn_id"],
                    turn.get("question"),
                    why,
                    tuple(turn.get("closest") or ()),
                    turn["created_ms"],
                )
            )
    by_day: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for turn in turns:
        by_day[_date(turn["created_ms"])].append(turn)
    days = []
    for date in sorted(by_day):
        group = by_day[date]
        confidences = [t["confidence"] for t in group if t.get("confidence") is not None]
        days.append(
            Day(
                date=date,
                turns=len(group),
                answered=sum(t["kind"] in ("answer", "passages") for t in group),
                refused=sum(t["kind"] == "refusal" for t in group),
                other=sum(t["kind"] in ("social", "credential") for t in group),
                mean_confidence=sum(confidences) / len(confidences) if confidences else None,
                cost_micro_usd=sum(int(t.get("cost_micro_usd") or 0) for t in group),
            )
        )
    verdict_turns = tuple(
        {"turn_id": t["turn_id"], "question": t.get("question"), "verdict": t["verdict"],
         "model": t.get("verdict_model") or ""}
        for t in turns
        if t.get("verdict")
    )
    return ReportData(
        since_ms=since_ms,
        until_ms=until,
        turns=len(turns),
        kinds=dict(Counter(t["kind"] for t in turns)),
        unanswered=tuple(unanswered),
        groups=tuple(group_questions(unanswered)),
        by_closest_page=tuple(_page_counts(p for u in unanswered for p in u.closest[:1])),
        most_cited=tuple(_page_counts(p for t in turns for p in t.get("cited_pages") or ())),
        days=tuple(days),
        confidence_points=tuple(
            (t["created_ms"], int(t["confidence"]))
            for t in turns
            if t.get("confidence") is not None
        ),
        verdicts=dict(Counter(v["verdict"] for v in verdict_turns)),
        verdict_turns=verdict_turns,
        cost_micro_usd=sum(int(t.get("cost_micro_usd") or 0) for t in turns),
        feedback=dict(Counter(t["feedback"]["rating"] for t in turns if t.get("feedback"))),
    )
