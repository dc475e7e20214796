"""Runtime settings: one TOML file (`--config FILE` or `DOCPILOT_CONFIG`).

Secrets never live here: providers and hosted embedders name the *environment
variable* that holds their key (`api_key_env`). Unknown tables and keys are errors
that name the file and the key, so a typo does not silently fall back to a default.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .answer_settings import AnswerSettings
from .caps import LimitSettings, parse_networks
from .index.options import IndexOptions, OptionsError, index_options
from .providers.base import ProviderSettings, provider_settings
from .security_headers import HeaderSettings
from .types import Limits
from .widget import WIDGET_KEYS, WidgetOptions, widget_options

CONFIG_ENV = "DOCPILOT_CONFIG"


class SettingsError(ValueError):
    """A settings file that cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class Settings:
    source: str = ""  # the file the settings came from, "" for defaults
    index: IndexOptions = field(default_factory=IndexOptions)
    widget: WidgetOptions = field(default_factory=WidgetOptions)
    limits: Limits = field(default_factory=Limits)
    cors_origins: tuple[str, ...] = ()
    social_templates: dict[str, dict[str, str]] = field(default_factory=dict)
    providers: tuple[ProviderSettings, ...] = ()
    answer: AnswerSettings = field(default_factory=AnswerSettings)
    caps: LimitSettings = field(default_factory=LimitSettings)
    headers: HeaderSettings = field(default_factory=HeaderSettings)
    raw: dict[str, Any] = field(default_factory=dict)


_SERVER_KEYS = {"cors_origins", "max_question_chars", "max_body_bytes"}


def _server(raw: dict[str, Any], file: Path) -> tuple[Limits, tuple[str, ...]]:
    server = raw.get("server", {})
    unknown = set(server) - _SERVER_KEYS
    if unknown:
        raise SettingsError(f"{file}: unknown key(s) {sorted(unknown)} in [server]")
    limits = Limits()
    for key in ("max_question_chars", "max_body_bytes"):
        if key in server:
            value = server[key]
            if not isinstance(value, int) or value <= 0:
                raise SettingsError(f"{file}: [server] {key} must be a positive integer")
            limits = replace(limits, **{key: value})
    origins = server.get("cors_origins", [])
    if not isinstance(origins, list) or not all(isinstance(o, str) for o in origins):
        raise SettingsError(f"{file}: [server] cors_origins must be a list of origins")
    return limits, tuple(origins)


def _social(raw: dict[str, Any], file: Path) -> dict[str, dict[str, str]]:
    templates = raw.get("social", {}).get("templates", {})
    intents = {"greeting", "thanks", "farewell", "identity"}
    out: dict[str, dict[str, str]] = {}
    for language, table in templates.items():
        if not isinstance(table, dict) or set(table) - intents:
            raise SettingsError(
                f"{file}: [social.templates.{language}] may only set {sorted(intents)}"
            )
        out[language] = {k: str(v) for k, v in table.items()}
    return out


_TABLES = {"index", "server", "providers", "embedder", "answer", "social", "limits", "headers"}
_ANSWER_KEYS = {"max_steps", "tentative_below", "max_answer_chars"}


def _providers(raw: dict[str, Any], file: Path) -> tuple[ProviderSettings, ...]:
    tables = raw.get("providers", [])
    if not isinstance(tables, list):
        raise SettingsError(f"{file}: providers must be an array of tables ([[providers]])")
    try:
        return tuple(
            provider_settings(t, f"{file} [[providers]] #{i + 1}") for i, t in enumerate(tables)
        )
    except ValueError as exc:
        raise SettingsError(str(exc)) from None


def _answer(raw: dict[str, Any], file: Path) -> AnswerSettings:
    table = raw.get("answer", {})
    unknown = set(table) - _ANSWER_KEYS
    if unknown:
        raise SettingsError(f"{file}: unknown key(s) {sorted(unknown)} in [answer]")
    for key, value in table.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise SettingsError(f"{file}: [answer] {key} must be a non-negative integer")
    if table.get("max_steps", 1) < 1:
        raise SettingsError(f"{file}: [answer] max_steps must be at least 1")
    if table.get("max_answer_chars", 200) < 200:
        raise SettingsError(f"{file}: [answer] max_answer_chars must be at least 200")
    return AnswerSettings(**table)


# [limits]: key -> (type, smallest allowed value); 0 switches a cap off.
_LIMIT_KEYS: dict[str, tuple[type, float]] = {
    "answers_per_minute": (int, 0),
    "answers_per_minute_per_client": (int, 0),
    "daily_spend_micro_usd": (int, 0),
    "body_read_seconds": (float, 0.1),
    "max_connections": (int, 1),
}


def _limits(raw: dict[str, Any], file: Path) -> LimitSettings:
    table = raw.get("limits", {})
    unknown = set(table) - set(_LIMIT_KEYS) - {"trusted_proxies", "public_usage"}
    if unknown:
        raise SettingsError(f"{file}: unknown key(s) {sorted(unknown)} in [limits]")
    values: dict[str, Any] = {}
    for key, (kind, least) in _LIMIT_KEYS.items():
        if key not in table:
            continue
        value = table[key]
        number = isinstance(value, int | float) if kind is float else isinstance(value, int)
        if isinstance(value, bool) or not number or value < least:
            raise SettingsError(
                f"{file}: [limits] {key} must be a {kind.__name__} of at least {least}, "
                f"got {value!r}"
            )
        values[key] = kind(value)
    public = table.get("public_usage", False)
    if not isinstance(public, bool):
        raise SettingsError(f"{file}: [limits] public_usage must be true or false")
    proxies = table.get("trusted_proxies", [])
    if not isinstance(proxies, list) or not all(isinstance(p, str) for p in proxies):
        raise SettingsError(f"{file}: [limits] trusted_proxies must be a list of addresses")
    try:
        networks = parse_networks(proxies, f"{file}: [limits] trusted_proxies")
    except ValueError as exc:
        raise SettingsError(str(exc)) from None
    return LimitSettings(**values, trusted_proxies=networks, public_usage=public)


def _headers(raw: dict[str, Any], file: Path) -> HeaderSettings:
    table = raw.get("headers", {})
    unknown = set(table) - {"page_policy", "frame_ancestors"}
    if unknown:
        raise SettingsError(f"{file}: unknown key(s) {sorted(unknown)} in [headers]")
    policy = table.get("page_policy", HeaderSettings.page_policy)
    if not isinstance(policy, str) or not policy.strip() or "\n" in policy or "\r" in policy:
        raise SettingsError(f"{file}: [headers] page_policy must be a one-line CSP string")
    ancestors = table.get("frame_ancestors", list(HeaderSettings.frame_ancestors))
    if not isinstance(ancestors, list) or not all(
        isinstance(a, str) and a and not any(c in a for c in " ;,\r\n") for a in ancestors
    ):
        raise SettingsError(
            f"{file}: [headers] frame_ancestors must be a list of CSP sources "
            "(\"'self'\", \"https://example.com\")"
        )
    return HeaderSettings(page_policy=policy.strip(), frame_ancestors=tuple(ancestors))


def load_settings(path: str | os.PathLike[str] | None = None) -> Settings:
    """Settings from ``path``, else from ``$DOCPILOT_CONFIG``, else the defaults."""
    chosen = path or os.environ.get(CONFIG_ENV)
    if not chosen:
        return Settings()
    file = Path(chosen)
    try:
        raw = tomllib.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SettingsError(f"{file}: settings file not found") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{file}: not valid TOML ({exc})") from None
    unknown = set(raw) - _TABLES
    if unknown:
        raise SettingsError(
            f"{file}: unknown table(s) {sorted(unknown)} (known: {sorted(_TABLES)})"
        )
    table = raw.get("index", {})
    try:
        index = index_options(
            {k: v for k, v in table.items() if k not in WIDGET_KEYS}, f"{file} [index]"
        )
        widget = widget_options(
            {k: v for k, v in table.items() if k in WIDGET_KEYS}, f"{file} [index]"
        )
    except OptionsError as exc:
        raise SettingsError(str(exc)) from None
    limits, origins = _server(raw, file)
    return Settings(
        source=str(file),
        index=index,
        widget=widget,
        limits=limits,
        cors_origins=origins,
        social_templates=_social(raw, file),
        providers=_providers(raw, file),
        answer=_answer(raw, file),
        caps=_limits(raw, file),
        headers=_headers(raw, file),
        raw=raw,
    )
