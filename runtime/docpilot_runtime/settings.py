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

from .answer_settings import AnswerSettings, turn_deadline
from .index.options import IndexOptions, OptionsError, index_options
from .providers.config import ProviderSettings, provider_settings
from .records.config import RecordsSettings, records_settings
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
    records: RecordsSettings = field(default_factory=RecordsSettings)
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


_TABLES = {"index", "server", "providers", "embedder", "answer", "social", "records"}
_ANSWER_KEYS = {"max_steps", "tentative_below", "max_answer_chars", "turn_deadline"}


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
    try:
        deadline = turn_deadline(table, f"{file}: [answer]")
    except ValueError as exc:
        raise SettingsError(str(exc)) from None
    table = {key: value for key, value in table.items() if key != "turn_deadline"}
    for key, value in table.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise SettingsError(f"{file}: [answer] {key} must be a non-negative integer")
    if table.get("max_steps", 1) < 1:
        raise SettingsError(f"{file}: [answer] max_steps must be at least 1")
    if table.get("max_answer_chars", 200) < 200:
        raise SettingsError(f"{file}: [answer] max_answer_chars must be at least 200")
    return AnswerSettings(**table, turn_deadline=deadline)


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
    try:
        records = records_settings(raw.get("records", {}), str(file))
    except ValueError as exc:
        raise SettingsError(str(exc)) from None
    return Settings(
        source=str(file),
        index=index,
        widget=widget,
        limits=limits,
        cors_origins=origins,
        social_templates=_social(raw, file),
        providers=_providers(raw, file),
        answer=_answer(raw, file),
        records=records,
        raw=raw,
    )
