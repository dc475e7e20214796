"""Limits of the answering stages, from the settings file's [answer] table."""

from __future__ import annotations

import math
from dataclasses import dataclass

DEFAULT_TURN_DEADLINE = 120.0
MAX_TURN_DEADLINE = 3600.0


@dataclass(frozen=True)
class AnswerSettings:
    max_steps: int = 4  # model calls per provider per turn
    tentative_below: int = 50  # a cited answer whose model confidence is lower is tentative
    max_answer_chars: int = 6000
    # Seconds the whole answer ladder may take, from the first model call; past it the
    # provider being asked is abandoned and the turn settles as `passages`.
    turn_deadline: float = DEFAULT_TURN_DEADLINE


def turn_deadline(table: dict[str, object], where: str) -> float:
    """`turn_deadline` of an [answer] table, checked: positive seconds up to an hour."""
    value = table.get("turn_deadline", DEFAULT_TURN_DEADLINE)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{where} turn_deadline must be a number of seconds, got {value!r}")
    if not (math.isfinite(value) and 0 < value <= MAX_TURN_DEADLINE):
        raise ValueError(
            f"{where} turn_deadline must be more than 0 and at most {MAX_TURN_DEADLINE:g} "
            f"seconds, got {value!r}"
        )
    return float(value)
