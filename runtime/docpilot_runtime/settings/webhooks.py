"""The `[webhooks]` table: receivers, the secret's variable, retries and backoff."""

from __future__ import annotations

import os
import random
from collections.abc import Mapping
from dataclasses import dataclass

from docpilot_runtime.settings.tables import WEBHOOKS

_DEFAULTS = WEBHOOKS.defaults()

@dataclass(frozen=True)
class WebhookSettings:
    """The `[webhooks]` table; the secret itself is read from ``secret_env`` at start."""

    urls: tuple[str, ...] = _DEFAULTS["urls"]
    secret_env: str = _DEFAULTS["secret_env"]
    timeout: float = _DEFAULTS["timeout"]
    max_attempts: int = _DEFAULTS["max_attempts"]
    backoff_seconds: float = _DEFAULTS["backoff_seconds"]
    max_backoff_seconds: float = _DEFAULTS["max_backoff_seconds"]
    verdict_wait: float = _DEFAULTS["verdict_wait"]

    def secret(self, environ: Mapping[str, str] = os.environ) -> bytes:
        """The signing secret; a missing or empty variable is an error naming it."""
        value = environ.get(self.secret_env, "") if self.secret_env else ""
        if not value:
            raise ValueError(
                f"[webhooks] secret_env: the environment variable {self.secret_env or '(unset)'}"
                " is not set or empty; webhooks need a shared secret"
            )
        return value.encode("utf-8")

    def backoff(self, failed_attempts: int, rng: random.Random | None = None) -> float:
        """Seconds before the next try after ``failed_attempts`` failures: doubling from
        `backoff_seconds`, capped, then jittered to between half and all of it, so
        receivers coming back are not hit by every sender at once."""
        doubled = self.backoff_seconds * 2.0 ** (failed_attempts - 1)
        ceiling = min(float(self.max_backoff_seconds), doubled)
        return ceiling * (rng or random).uniform(0.5, 1.0)
