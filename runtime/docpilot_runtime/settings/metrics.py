"""The `[metrics]` table: whether `/metrics` is served, and behind which token."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from docpilot_runtime.settings.tables import METRICS

_DEFAULTS = METRICS.defaults()

@dataclass(frozen=True)
class MetricsSettings:
    """The `[metrics]` table; the token is read from ``token_env`` when the app starts."""

    enabled: bool = _DEFAULTS["enabled"]
    token_env: str = _DEFAULTS["token_env"]

    def token(self, environ: Mapping[str, str] = os.environ) -> str:
        """The bearer token `/metrics` wants ("" for none); a named but unset variable is
        an error naming it, so the endpoint is never open by accident."""
        if not self.token_env:
            return ""
        value = environ.get(self.token_env, "")
        if not value:
            raise ValueError(
                f"[metrics] token_env: the environment variable {self.token_env} is not set "
                "or empty"
            )
        return value
