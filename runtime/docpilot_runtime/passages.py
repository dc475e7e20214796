"""The `passages` answer: the best excerpts, each cited, quoting the sentences most
relevant to the question. Used when no model is configured (or none answered).

Every line it writes ends with a citation marker: there is no uncited sentence, not
even an introduction. Pure Python (the browser's static mode writes the same answer).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from .tokenize import query_terms, tokenize

_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+")
_FENCE = re.compile(r"^(`{3,})[^\n]*\n.*?\n\1\s*$", re.S | re.M)
MAX_SENTENCES = 2
MAX_CODE_CHARS = 600
MAX_SENTENCE_CHARS = 400


class Excerptable(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def text(self) -> str: ...


def _prose_and_code(text: str) -> tuple[list[str], list[str]]:
    code = [m.group(0) for m in _FENCE.finditer(text)]
    prose = _FENCE.sub("\n\n", text)
    sentences: list[str] = []
    for block in re.split(r"\n\s*\n", prose):
        lines = [line.strip() for line in block.splitlines() if line.strip()]
        if not lines or lines[0].startswith("|"):
            continue
        # A list item starts a part of its own; other lines continue the current one.
        parts: list[str] = []
        for line in lines:
            if line.startswith("- ") or not parts:
                parts.append(line[2:] if line.startswith("- ") else line)
            else:
                parts[-1] += " " + line
        for part in parts:
            sentences.extend(s.strip() for s in _SENTENCE.split(part) if s.strip())
    return sentences, code


def _overlap(terms: set[str], text: str) -> int:
    return len(terms & set(tokenize(text)))


def excerpt(question: str, text: str) -> str:
    """The sentences of ``text`` that share most terms with the question (in their
    original order), plus its first code block when the code shares terms too."""
    terms = set(query_terms(question))
    sentences, code = _prose_and_code(text)
    scored = sorted(range(len(sentences)), key=lambda i: (-_overlap(terms, sentences[i]), i))[
        :MAX_SENTENCES
    ]
    chosen = [sentences[i][:MAX_SENTENCE_CHARS] for i in sorted(scored)]
    parts = [" ".join(chosen)] if chosen else []
    if code and (not chosen or _overlap(terms, code[0]) > 0):
        block = code[0]
        if len(block) <= MAX_CODE_CHARS:
            parts.append(block)
    return "\n\n".join(p for p in parts if p)


def passages_markdown(question: str, units: Sequence[Excerptable]) -> str:
    """One cited excerpt per unit, numbered in order: ``**Title** — text [n]``."""
    blocks = []
    for n, unit in enumerate(units, start=1):
        body = excerpt(question, unit.text) or unit.text[:MAX_SENTENCE_CHARS]
        head, _, code = body.partition("\n\n")
        lead = f"**{unit.title}**: {head}" if not head.startswith("```") else f"**{unit.title}**"
        block = f"{lead} [{n}]"
        if head.startswith("```"):
            block += "\n\n" + head
        if code:
            block += "\n\n" + code
        blocks.append(block)
    return "\n\n".join(blocks)
