"""Limits of the answering stages, from the settings file's [answer] table."""

from __future__ import annotations

from dataclasses import dataclass

MAX_ANSWER_CHARS = 6000  # the one default for the answer's length cap (validate uses it)


@dataclass(frozen=True)
class AnswerSettings:
    max_steps: int = 4  # model calls per provider per turn
    tentative_below: int = 50  # a cited answer whose model confidence is lower is tentative
    max_answer_chars: int = MAX_ANSWER_CHARS
