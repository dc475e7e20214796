"""The `[second_opinion]` table: which answers a second model call checks."""

from __future__ import annotations

from dataclasses import dataclass

from docpilot_runtime.settings.tables import SECOND_OPINION

_DEFAULTS = SECOND_OPINION.defaults()

@dataclass(frozen=True)
class SecondOpinionSettings:
    """The `[second_opinion]` table."""

    enabled: bool = _DEFAULTS["enabled"]
    min_confidence: int = _DEFAULTS["min_confidence"]
    provider: int = _DEFAULTS["provider"]
    max_tokens: int = _DEFAULTS["max_tokens"]

    def applies(self, kind: str, confidence: int | None) -> bool:
        """Whether a turn is checked: a cited answer the search was confident about."""
        return (
            self.enabled
            and kind == "answer"
            and confidence is not None
            and confidence >= self.min_confidence
        )
