"""Limits of the answering stages, from the settings file's [answer] table."""

from __future__ import annotations

from dataclasses import dataclass

from docpilot_runtime.settings.tables import ANSWER

_DEFAULTS = ANSWER.defaults()
MAX_ANSWER_CHARS: int = _DEFAULTS["max_answer_chars"]  # the one default of the length cap


@dataclass(frozen=True)
class AnswerSettings:
    """Defaults, ranges and docs are the schema's (`settings_schema.ANSWER`)."""

    max_steps: int = _DEFAULTS["max_steps"]  # model calls per provider per turn
    tentative_below: int = _DEFAULTS["tentative_below"]  # lower model confidence: tentative
    max_answer_chars: int = MAX_ANSWER_CHARS
    # Seconds the turn's model calls may take together (rewrite and ladder), from the
    # first; past it the provider being asked is abandoned.
    turn_deadline: float = _DEFAULTS["turn_deadline"]
    rewrite: bool = _DEFAULTS["rewrite"]  # follow-ups and other languages: a rewrite call


LOCAL_TURN_DEADLINE = 600.0  # the default when a provider is on loopback (a CPU model)
