"""Runtime settings: one TOML file (`--config FILE` or `DOCPILOT_CONFIG`).

Secrets never live here: providers and hosted embedders name the *environment
variable* that holds their key (`api_key_env`). Every table and key is checked against
`settings_schema` when the file is read: an unknown table or key is an error naming the
file, the table and the nearest valid name, and a value of the wrong type or range is
an error naming the key, so a typo never falls back to a default.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from docpilot_runtime.settings.answer import LOCAL_TURN_DEADLINE, AnswerSettings
from docpilot_runtime.settings.bundle import BundleSettings, url_refusal
from docpilot_runtime.settings.embedder import QueryEmbedderSettings
from docpilot_runtime.settings.headers import PAGE_POLICY, HeaderSettings
from docpilot_runtime.settings.index import IndexOptions, index_options
from docpilot_runtime.settings.keys import OptionsError, unknown_key_message
from docpilot_runtime.settings.limits import LimitSettings, parse_networks
from docpilot_runtime.settings.metrics import MetricsSettings
from docpilot_runtime.settings.providers import (
    ProviderSettings,
    is_loopback,
    provider_settings,
)
from docpilot_runtime.settings.records import RecordsSettings
from docpilot_runtime.settings.second_opinion import SecondOpinionSettings
from docpilot_runtime.settings.tables import HTTP, SOCIAL, SOCIAL_TEMPLATE, TABLES
from docpilot_runtime.settings.webhooks import WebhookSettings
from docpilot_runtime.settings.widget import WIDGET_KEYS, WidgetOptions, widget_options
from docpilot_runtime.shared.types import Limits

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
    embedder: QueryEmbedderSettings = field(default_factory=QueryEmbedderSettings)
    caps: LimitSettings = field(default_factory=LimitSettings)
    headers: HeaderSettings = field(default_factory=HeaderSettings)
    records: RecordsSettings = field(default_factory=RecordsSettings)
    webhooks: WebhookSettings = field(default_factory=WebhookSettings)
    second_opinion: SecondOpinionSettings = field(default_factory=SecondOpinionSettings)
    metrics: MetricsSettings = field(default_factory=MetricsSettings)
    bundle: BundleSettings = field(default_factory=BundleSettings)


def _table(raw: Mapping[str, Any], name: str, file: Path) -> dict[str, Any]:
    """The checked keys of one (non-array) table."""
    table, _ = TABLES[name]
    value = raw.get(name, {})
    if not isinstance(value, Mapping):
        raise OptionsError(f"{file}: {table.name} must be a table, got {value!r}")
    return table.check(value, f"{file} {table.name}")


def _server(raw: Mapping[str, Any], file: Path) -> tuple[Limits, tuple[str, ...]]:
    checked = _table(raw, "server", file)
    origins = checked.pop("cors_origins", ())
    return Limits(**checked), tuple(origins)


def _social(raw: Mapping[str, Any], file: Path) -> dict[str, dict[str, str]]:
    templates = _table(raw, "social", file).get("templates", {})
    if not isinstance(templates, Mapping):
        raise OptionsError(f"{file} {SOCIAL.name}: templates must be a table of languages")
    out: dict[str, dict[str, str]] = {}
    for language, table in templates.items():
        where = f"{file} [social.templates.{language}]"
        if not isinstance(table, Mapping):
            raise OptionsError(f"{where}: must be a table of {', '.join(SOCIAL_TEMPLATE.names())}")
        out[language] = SOCIAL_TEMPLATE.check(table, where)
    return out


def _providers(raw: Mapping[str, Any], file: Path) -> tuple[ProviderSettings, ...]:
    table, _ = TABLES["providers"]
    tables = raw.get("providers", [])
    if not isinstance(tables, list) or not all(isinstance(t, Mapping) for t in tables):
        raise OptionsError(f"{file}: providers must be an array of tables ([[providers]])")
    out = []
    for number, values in enumerate(tables, start=1):
        where = f"{file} [[providers]] #{number}"
        if "api_key" in values:
            raise OptionsError(
                f"{where}: api_key is not allowed in the settings file; put the key in an "
                "environment variable and name that variable with api_key_env"
            )
        table.check(values, where)
        try:
            out.append(provider_settings(values, where))
        except ValueError as exc:
            raise OptionsError(str(exc)) from None
    return tuple(out)


def build_options(values: Mapping[str, Any], where: str) -> tuple[IndexOptions, WidgetOptions]:
    """The build and widget options from one mapping (the plugin's config, or the settings
    file's [index] table): one check for both, so an unknown key is named with the
    nearest valid one whichever half it was meant for."""
    index_table, _ = TABLES["index"]
    index_table.check(values, where)
    build = {k: v for k, v in values.items() if k not in WIDGET_KEYS}
    widget = {k: v for k, v in values.items() if k in WIDGET_KEYS}
    return index_options(build, where), widget_options(widget, where)


def _index(raw: Mapping[str, Any], file: Path) -> tuple[IndexOptions, WidgetOptions]:
    table = raw.get("index", {})
    if not isinstance(table, Mapping):
        raise OptionsError(f"{file}: [index] must be a table, got {table!r}")
    return build_options(table, f"{file} [index]")


def parse_settings(raw: Mapping[str, Any], file: Path) -> Settings:
    """Settings from a decoded TOML document; raises SettingsError naming file and key."""
    for name in raw:
        if name not in TABLES:
            message = unknown_key_message(str(file), name, TABLES, kind="table")
            raise SettingsError(message)
    try:
        index, widget = _index(raw, file)
        limits, origins = _server(raw, file)
        embedder = QueryEmbedderSettings(**_table(raw, "embedder", file))
        return Settings(
            source=str(file),
            index=index,
            widget=widget,
            limits=limits,
            cors_origins=origins,
            social_templates=_social(raw, file),
            providers=_providers(raw, file),
            answer=_answer(raw, file),
            embedder=embedder,
            caps=_limits(raw, file),
            headers=_headers(raw, file),
            records=_records(raw, file),
            webhooks=_webhooks(raw, file),
            second_opinion=_second_opinion(raw, file),
            metrics=MetricsSettings(**_table(raw, "metrics", file)),
            bundle=_bundle(raw, file),
        )
    except ValueError as exc:  # OptionsError, or a trusted proxy that is no address
        raise SettingsError(str(exc)) from None


def _answer(raw: Mapping[str, Any], file: Path) -> AnswerSettings:
    """[answer]; with a provider on loopback (a model on a CPU), a longer turn deadline
    unless the file sets one."""
    checked = _table(raw, "answer", file)
    if "turn_deadline" not in checked and any(
        isinstance(t, Mapping) and is_loopback(str(t.get("base_url", "")))
        for t in raw.get("providers", []) or []
    ):
        checked["turn_deadline"] = LOCAL_TURN_DEADLINE
    return AnswerSettings(**checked)


def _limits(raw: Mapping[str, Any], file: Path) -> LimitSettings:
    checked = _table(raw, "limits", file)
    proxies = checked.pop("trusted_proxies", ())
    networks = parse_networks(proxies, f"{file} [limits] trusted_proxies")
    return LimitSettings(**checked, trusted_proxies=networks)


def _records(raw: Mapping[str, Any], file: Path) -> RecordsSettings:
    checked = _table(raw, "records", file)
    if "path" in checked and not checked["path"].strip():
        raise OptionsError(f"{file} [records]: path must be a non-empty string")
    return RecordsSettings(**checked)


def _webhooks(raw: Mapping[str, Any], file: Path) -> WebhookSettings:
    checked = _table(raw, "webhooks", file)
    for number, url in enumerate(checked.get("urls", ()), start=1):
        if not url.lower().startswith(HTTP) or any(c.isspace() for c in url):
            raise OptionsError(
                f"{file} [webhooks]: urls #{number} must be an http:// or https:// URL"
            )
    if checked.get("urls") and not checked.get("secret_env"):
        raise OptionsError(
            f"{file} [webhooks]: secret_env is required with urls (the name of the "
            "environment variable holding the signing secret)"
        )
    return WebhookSettings(**checked)


def _second_opinion(raw: Mapping[str, Any], file: Path) -> SecondOpinionSettings:
    checked = SecondOpinionSettings(**_table(raw, "second_opinion", file))
    count = len(raw.get("providers", []) or [])
    if checked.enabled and checked.provider >= count:
        raise OptionsError(
            f"{file} [second_opinion]: provider = {checked.provider} but "
            f"{count} [[providers]] entr{'y is' if count == 1 else 'ies are'} configured"
        )
    return checked


def _bundle(raw: Mapping[str, Any], file: Path) -> BundleSettings:
    checked = _table(raw, "bundle", file)
    url = checked.get("url", "")
    if url:
        refusal = url_refusal(url, checked.get("allow_http", False))
        if refusal is not None:
            raise OptionsError(f"{file} {refusal}")
    return BundleSettings(**checked)


def _headers(raw: Mapping[str, Any], file: Path) -> HeaderSettings:
    checked = _table(raw, "headers", file)
    policy = checked.get("page_policy", "").strip() or PAGE_POLICY
    if "\n" in policy or "\r" in policy or "frame-ancestors" in policy:
        raise OptionsError(
            f"{file} [headers]: page_policy must be one line without frame-ancestors "
            "(set those with frame_ancestors)"
        )
    ancestors = checked.get("frame_ancestors", HeaderSettings.frame_ancestors)
    if not all(a and not any(c in a for c in " ;,\r\n") for a in ancestors):
        raise OptionsError(
            f"{file} [headers]: frame_ancestors must be a list of CSP sources "
            "(\"'self'\", \"https://example.com\")"
        )
    return HeaderSettings(
        page_policy=policy,
        frame_ancestors=tuple(ancestors),
        allow_page_sources=checked.get("allow_page_sources", True),
    )


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
    except IsADirectoryError:
        raise SettingsError(f"{file}: is a directory, not a settings file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{file}: not valid TOML ({exc})") from None
    return parse_settings(raw, file)
