"""The sentences of a section's prose, cut as a reader would cut them, and the ones a
passage quotes for a question.

A sentence ends at ".", "!" or "?" (or their full-width forms) followed by a space,
except inside a code span (``exclude: [a. b]``), after a common abbreviation ("e.g.",
"i.e.", "etc.") or a one-letter initial, and before a lowercase letter (the sentence goes
on). A passage quotes the sentence that shares most words with the question, whole
(a longer one is cut to a window around its first matching word, marked with "…",
never inside a code span), and beside it, from the same paragraph or list item, the
neighbouring sentence that shares most words too: one stretch of the docs' own text,
never fragments from different places stitched together.

Pure Python (the browser's static mode quotes the same way).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from docpilot_runtime.retrieve.tokenize import tokenize

_END = re.compile(r"[.!?。！？]\s+")
_CODE_SPAN = re.compile(r"(?<![\\`])(`+)(?!`)[\s\S]*?(?<!`)\1(?!`)")
_ABBREVIATIONS = frozenset({"e.g", "i.e", "etc", "vs", "cf", "incl", "approx", "fig", "no"})
_WORD = re.compile(r"\w+")
_SHORT = 60  # a best sentence shorter than this takes its next one along for context


def overlap(terms: set[str], text: str) -> int:
    """How many of the question's terms ``text`` holds."""
    return len(terms & set(tokenize(text)))


def _code_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in _CODE_SPAN.finditer(text)]


def _inside(spans: Sequence[tuple[int, int]], at: int) -> tuple[int, int] | None:
    return next((span for span in spans if span[0] < at < span[1]), None)


def split_sentences(text: str) -> list[str]:
    """``text``'s sentences (see the module docstring for where one ends)."""
    spans = _code_spans(text)
    sentences: list[str] = []
    start = 0
    for end in _END.finditer(text):
        mark = end.start()
        if _inside(spans, mark) or text[end.end() : end.end() + 1].islower():
            continue
        before = text[start:mark].rsplit(None, 1)
        word = before[-1].lstrip("(\"'").lower() if before else ""
        if text[mark] == "." and (word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha())):
            continue
        sentences.append(text[start : end.end()].strip())
        start = end.end()
    if text[start:].strip():
        sentences.append(text[start:].strip())
    return sentences


def _around(sentence: str, terms: set[str], limit: int) -> str:
    """``sentence`` within ``limit`` characters: whole, or a window from a little before
    its first matching word, cut at spaces and never inside a code span."""
    if len(sentence) <= limit:
        return sentence
    spans = _code_spans(sentence)
    hit = next((m.start() for m in _WORD.finditer(sentence) if terms & set(tokenize(m[0]))), 0)
    start = max(0, min(hit - limit // 3, len(sentence) - limit))
    if start:
        start = sentence.find(" ", start) + 1 or start
        span = _inside(spans, start)
        start = span[0] if span else start
    end = start + limit - 2
    if end < len(sentence):
        end = sentence.rfind(" ", start, end) if " " in sentence[start:end] else end
        span = _inside(spans, end)
        end = span[0] if span and span[0] > start else end
    body = sentence[start:end].strip()
    return ("…" if start else "") + body + ("…" if end < len(sentence) else "")


def quoted_sentences(terms: set[str], blocks: Sequence[Sequence[str]], limit: int) -> list[str]:
    """The sentences to quote from ``blocks`` (each a paragraph's or an item's sentences):
    the best match and its best neighbour in the same block, in their order. With no
    match, the text's first sentences."""
    places = [(b, i) for b, block in enumerate(blocks) for i in range(len(block))]
    if not places:
        return []
    scores = {place: overlap(terms, blocks[place[0]][place[1]]) for place in places}
    block, best = max(places, key=lambda place: scores[place])  # the first of the best
    sentences = blocks[block]
    around = [i for i in (best - 1, best + 1) if 0 <= i < len(sentences)]
    ranked = sorted(around, key=lambda i: (-scores[(block, i)], i))
    neighbour = next((i for i in ranked if scores[(block, i)] > 0), None)
    if neighbour is None and len(sentences[best]) < _SHORT and best + 1 < len(sentences):
        neighbour = best + 1
    chosen = [_around(sentences[best], terms, limit)]
    if neighbour is not None and len(sentences[neighbour]) <= limit:
        chosen.insert(0 if neighbour < best else 1, sentences[neighbour])
    return chosen
