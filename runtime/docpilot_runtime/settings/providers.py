"""One `[[providers]]` table of the runtime settings file, checked: ProviderSettings."""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from docpilot_runtime.settings.tables import ENV_NAME

PROVIDER_KINDS = ("anthropic", "openai")
DEFAULT_BASE_URLS = {
    "anthropic": "https://api.anthropic.com",
    "openai": "https://api.openai.com/v1",
}
# Sent as Anthropic's output_config.effort / OpenAI's reasoning_effort; "" sends nothing.
EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
MAX_RETRIES = 5
# How the ladder prompts a provider: "full" (the rules, six excerpts by id, the lookup
# tools and the `answer` call) or "compact" (a few lines of rules, three excerpts
# numbered [1]..[3], no tools: a plain text answer), for small models.
PROFILES = ("full", "compact")
# "auto": the model may call a tool; "required": every step must call one; "answer_last":
# the last step offers only `answer` and requires it; "answer": every step does.
TOOL_CHOICES = ("auto", "required", "answer_last", "answer")
PROFILE_EXCERPTS = {"full": 6, "compact": 3}
# A provider on this machine (a loopback base_url) is most likely a model on a CPU: its
# first token can take tens of seconds to minutes (issue 22: 17-175 s on 2 loaded cores),
# so the timeouts it gets by default are longer, and its answers are kept short.
LOCAL_DEFAULTS = {"timeout": 300.0, "first_token_timeout": 300.0, "idle_timeout": 120.0,
                  "max_tokens": 512}
HOSTED_DEFAULTS = {"timeout": 30.0, "first_token_timeout": 30.0, "idle_timeout": 30.0,
                   "max_tokens": 1500}


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
    temperature: float | None = None  # None = not sent (the server's own default)
    tool_choice: str = "auto"  # see TOOL_CHOICES
    profile: str = "full"  # see PROFILES
    excerpts: int = 0  # excerpts in the first message; 0 = the profile's own
    structured_output: bool = False  # compact: the reply is JSON a schema describes

    @property
    def name(self) -> str:
        return f"{self.kind}:{self.model}"

    @property
    def excerpt_count(self) -> int:
        return self.excerpts or PROFILE_EXCERPTS[self.profile]

    @property
    def local(self) -> bool:
        return is_loopback(self.base_url)


def is_loopback(url: str) -> bool:
    """Whether ``url`` points at this machine (localhost or a loopback address)."""
    host = (urlsplit(url).hostname or "").rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


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
    "temperature",
    "tool_choice",
    "profile",
    "excerpts",
    "structured_output",
)
MAX_STREAM_TIMEOUT_SECONDS = 600.0
MAX_EXCERPTS = 12


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
    defaults = LOCAL_DEFAULTS if is_loopback(base_url) else HOSTED_DEFAULTS
    temperature = table.get("temperature")
    if temperature is not None and (
        isinstance(temperature, bool)
        or not isinstance(temperature, int | float)
        or not 0 <= temperature <= 2
    ):
        raise ValueError(f"{where}: temperature must be a number from 0 to 2, got {temperature!r}")
    tool_choice = table.get("tool_choice", "auto")
    if tool_choice not in TOOL_CHOICES:
        raise ValueError(
            f"{where}: tool_choice must be one of {list(TOOL_CHOICES)}, got {tool_choice!r}"
        )
    profile = table.get("profile", "full")
    if profile not in PROFILES:
        raise ValueError(f"{where}: profile must be one of {list(PROFILES)}, got {profile!r}")
    structured = table.get("structured_output", False)
    if not isinstance(structured, bool):
        raise ValueError(f"{where}: structured_output must be true or false, got {structured!r}")
    if structured and (kind != "openai" or profile != "compact"):
        raise ValueError(
            f"{where}: structured_output needs kind = \"openai\" (an OpenAI-compatible "
            'server: response_format json_schema) and profile = "compact"'
        )
    return ProviderSettings(
        kind=kind,
        base_url=base_url,
        model=model,
        api_key_env=api_key_env,
        timeout=_positive_seconds(table, "timeout", defaults["timeout"], where),
        connect_timeout=_positive_seconds(table, "connect_timeout", 5.0, where),
        max_tokens=_int_in(table, "max_tokens", int(defaults["max_tokens"]), 1, 1_000_000, where),
        retries=_int_in(table, "retries", 1, 0, MAX_RETRIES, where),
        effort=effort,
        first_token_timeout=_seconds_up_to(
            table, "first_token_timeout", defaults["first_token_timeout"],
            MAX_STREAM_TIMEOUT_SECONDS, where,
        ),
        idle_timeout=_seconds_up_to(
            table, "idle_timeout", defaults["idle_timeout"], MAX_STREAM_TIMEOUT_SECONDS, where
        ),
        temperature=None if temperature is None else float(temperature),
        tool_choice=tool_choice,
        profile=profile,
        excerpts=_int_in(table, "excerpts", 0, 0, MAX_EXCERPTS, where),
        structured_output=structured,
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
