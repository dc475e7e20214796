"""One `[[providers]]` table of the runtime settings file, checked: ProviderSettings."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from docpilot_runtime.settings.tables import ENV_NAME

PROVIDER_KINDS = ("anthropic", "openai")
DEFAULT_BASE_URLS = {
    "anthropic": "https://api.anthropic.com",
    "openai": "https://api.openai.com/v1",
}
# Sent as Anthropic's output_config.effort / OpenAI's reasoning_effort; "" sends nothing.
EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
MAX_RETRIES = 5


@dataclass(frozen=True)
class ProviderSettings:
    """One `[[providers]]` entry of the runtime settings file, in ladder order.

    `timeout` is how long to wait for the first byte and then between streamed chunks
    (not a cap on the whole answer, which may stream for longer); `retries` extra tries
    are made only before any of the answer has streamed. `first_token_timeout` and
    `idle_timeout` bound the wait for the first reply event and then between events;
    keep-alive comments and pings do not count as events, so a router that only sends
    them is abandoned and the ladder moves on.
    """

    kind: str  # "anthropic" | "openai" (any OpenAI-compatible Chat Completions server)
    base_url: str
    model: str
    api_key_env: str = ""  # the NAME of the variable holding the key; "" sends no key
    timeout: float = 30.0
    connect_timeout: float = 5.0
    max_tokens: int = 1500
    retries: int = 1
    effort: str = ""  # "" = the model's default
    first_token_timeout: float = 30.0
    idle_timeout: float = 30.0

    @property
    def name(self) -> str:
        return f"{self.kind}:{self.model}"


_SETTING_KEYS = (
    "kind",
    "base_url",
    "model",
    "api_key_env",
    "timeout",
    "connect_timeout",
    "max_tokens",
    "retries",
    "effort",
    "first_token_timeout",
    "idle_timeout",
)
MAX_STREAM_TIMEOUT_SECONDS = 600.0


def provider_settings(table: Mapping[str, Any], where: str) -> ProviderSettings:
    """Check one `[[providers]]` TOML table; a bad one raises ValueError naming where and key.

    `base_url` defaults to the vendor's public endpoint for its kind. A value that might be
    a secret (an `api_key`, a malformed `api_key_env`) is never quoted back.
    """
    if "api_key" in table:
        raise ValueError(
            f"{where}: api_key is not allowed in the settings file; put the key in an "
            "environment variable and name that variable with api_key_env"
        )
    unknown = sorted(set(table) - set(_SETTING_KEYS))
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {unknown} (known: {list(_SETTING_KEYS)})")
    kind = table.get("kind")
    if kind not in PROVIDER_KINDS:
        raise ValueError(f"{where}: kind must be one of {list(PROVIDER_KINDS)}, got {kind!r}")
    model = table.get("model")
    if not isinstance(model, str) or not re.fullmatch(r"\S+", model):
        raise ValueError(f"{where}: model must be a model name without spaces, got {model!r}")
    base_url = table.get("base_url", DEFAULT_BASE_URLS[kind])
    if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
        raise ValueError(f"{where}: base_url must start with http:// or https://, got {base_url!r}")
    api_key_env = table.get("api_key_env", "")
    if not isinstance(api_key_env, str) or not re.fullmatch(f"(?:{ENV_NAME})?", api_key_env):
        # Not quoted: a key pasted here by mistake must not end up in a log.
        raise ValueError(
            f"{where}: api_key_env must be the name of an environment variable "
            "(letters, digits, underscores), not the key itself"
        )
    effort = table.get("effort", "")
    if effort not in ("", *EFFORTS):
        raise ValueError(f"{where}: effort must be one of {list(EFFORTS)}, got {effort!r}")
    return ProviderSettings(
        kind=kind,
        base_url=base_url,
        model=model,
        api_key_env=api_key_env,
        timeout=_positive_seconds(table, "timeout", 30.0, where),
        connect_timeout=_positive_seconds(table, "connect_timeout", 5.0, where),
        max_tokens=_int_in(table, "max_tokens", 1500, 1, 1_000_000, where),
        retries=_int_in(table, "retries", 1, 0, MAX_RETRIES, where),
        effort=effort,
        first_token_timeout=_seconds_up_to(
            table, "first_token_timeout", 30.0, MAX_STREAM_TIMEOUT_SECONDS, where
        ),
        idle_timeout=_seconds_up_to(table, "idle_timeout", 30.0, MAX_STREAM_TIMEOUT_SECONDS, where),
    )


def _positive_seconds(table: Mapping[str, Any], key: str, default: float, where: str) -> float:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{where}: {key} must be a number of seconds, got {value!r}")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{where}: {key} must be positive seconds, got {value!r}")
    return float(value)


def _seconds_up_to(
    table: Mapping[str, Any], key: str, default: float, high: float, where: str
) -> float:
    seconds = _positive_seconds(table, key, default, where)
    if seconds > high:
        raise ValueError(f"{where}: {key} must be at most {high:g} seconds, got {seconds:g}")
    return seconds


def _int_in(
    table: Mapping[str, Any], key: str, default: int, low: int, high: int, where: str
) -> int:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{where}: {key} must be an integer from {low} to {high}, got {value!r}")
    return value
