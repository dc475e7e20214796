"""The settings schema: every table of the settings file checked when it is read (unknown
keys named with the nearest valid one, types, ranges, choices), and every owner of a
default (dataclasses, the plugin's config, the widget's JS, the reference pages) held
equal to the one schema."""

from __future__ import annotations

import json
import re
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from corpora import ROOT
from docpilot_runtime.embedders import EMBEDDER_NAMES
from docpilot_runtime.index.units import DEFAULT_MAX_SECTION_CHARS
from docpilot_runtime.records import RecordsSettings
from docpilot_runtime.settings import providers
from docpilot_runtime.settings.answer import AnswerSettings
from docpilot_runtime.settings.docs import render_page
from docpilot_runtime.settings.embedder import EmbedderSpec, QueryEmbedderSettings
from docpilot_runtime.settings.headers import HeaderSettings
from docpilot_runtime.settings.index import IndexOptions
from docpilot_runtime.settings.keys import OptionsError
from docpilot_runtime.settings.limits import LimitSettings
from docpilot_runtime.settings.load import (
    Settings,
    SettingsError,
    build_options,
    load_settings,
)
from docpilot_runtime.settings.tables import (
    ANSWER,
    EMBEDDER,
    HEADERS,
    INDEX,
    INDEX_EMBEDDER,
    LIMITS,
    PLUGIN,
    PROVIDER,
    RECORDS,
    SERVER,
    TABLES,
    WIDGET,
)
from docpilot_runtime.settings.tables import EMBEDDER_NAMES as SCHEMA_EMBEDDER_NAMES
from docpilot_runtime.settings.widget import WidgetOptions
from docpilot_runtime.shared.types import Limits

REFERENCE = ROOT / "example-site" / "docs" / "reference"
PROVIDER_OK = 'kind = "openai"\nmodel = "m"\n'


def load(tmp_path: Path, text: str) -> Settings:
    path = tmp_path / "docpilot.toml"
    path.write_text(text, encoding="utf-8")
    return load_settings(path)


def refused(tmp_path: Path, text: str) -> str:
    with pytest.raises(SettingsError) as caught:
        load(tmp_path, text)
    message = str(caught.value)
    assert message.startswith(str(tmp_path / "docpilot.toml")), message
    return message


# ---------------------------------------------------------------------- unknown names


@pytest.mark.parametrize(
    ("text", "table", "typo", "nearest"),
    [
        ('[embedder]\nbase_urll = "http://127.0.0.1:1/v1"\n', "[embedder]", "base_urll", "base_url"),
        ("[server]\nmax_body_bites = 10\n", "[server]", "max_body_bites", "max_body_bytes"),
        ("[answer]\nmax_step = 2\n", "[answer]", "max_step", "max_steps"),
        (f"[[providers]]\n{PROVIDER_OK}timeot = 3\n", "[[providers]] #1", "timeot", "timeout"),
        ('[social.templates.en]\ngreting = "hi"\n', "[social.templates.en]", "greting", "greeting"),
        ("[social]\ntemplate = {}\n", "[social]", "template", "templates"),
        ('[index]\ntitel = "Ask"\n', "[index]", "titel", "title"),
        ("[index]\nmax_section_char = 900\n", "[index]", "max_section_char", "max_section_chars"),
        ("[index.embedder]\ndimz = 256\n", "[index] embedder", "dimz", "dims"),
    ],
)
def test_misspelt_key_is_refused_naming_table_and_nearest_key(
    tmp_path: Path, text: str, table: str, typo: str, nearest: str
) -> None:
    message = refused(tmp_path, text)
    assert f"{table}: unknown key '{typo}'; did you mean {nearest}?" in message


def test_misspelt_table_is_refused_naming_the_nearest_table(tmp_path: Path) -> None:
    message = refused(tmp_path, "[sever]\ncors_origins = []\n")
    assert "unknown table 'sever'; did you mean server?" in message


def test_unknown_key_with_no_near_name_lists_the_known_keys(tmp_path: Path) -> None:
    message = refused(tmp_path, "[embedder]\nzzz = 1\n")
    assert "unknown key 'zzz' (known: api_key_env, base_url, timeout)" in message


def test_misspelt_embedder_name_suggests_the_real_one(tmp_path: Path) -> None:
    message = refused(tmp_path, '[index]\nembedder = "wordlama"\n')
    assert "got 'wordlama'; did you mean wordllama?" in message


# ---------------------------------------------------------------------- types and ranges


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[embedder]\ntimeout = "ten"\n', "timeout must be a positive number of seconds, got 'ten'"),
        ("[embedder]\ntimeout = 0\n", "timeout must be a positive number of seconds, got 0"),
        ('[embedder]\nbase_url = "ftp://x"\n', "'base_url' must start with http:// or https://"),
        ("[server]\nmax_question_chars = 0\n", "max_question_chars must be an integer of at least 1"),
        ('[server]\ncors_origins = "https://a.example"\n', "cors_origins must be a list of strings"),
        ("[answer]\ntentative_below = 101\n", "tentative_below must be an integer from 0 to 100"),
        ("[answer]\nmax_answer_chars = 10\n", "max_answer_chars must be an integer of at least 200"),
        ("[answer]\nmax_steps = true\n", "max_steps must be an integer of at least 1, got True"),
        (f"[[providers]]\n{PROVIDER_OK}retries = 9\n", "retries must be an integer from 0 to 5"),
        (f'[[providers]]\n{PROVIDER_OK}effort = "hgih"\n', "did you mean high?"),
        (f'[[providers]]\n{PROVIDER_OK}timeout = "ten"\n', "timeout must be a positive number"),
        ('[[providers]]\nkind = "openai"\n', "model is required"),
        ("[social.templates.en]\ngreeting = 3\n", "greeting must be a string, got 3"),
        ('[social.templates]\nen = "hi"\n', "[social.templates.en]: must be a table of greeting"),
        ('[index]\nposition = "top"\n', "position must be one of 'bottom-right', 'bottom-left'"),
        ('[index]\nendpoint = "ftp://x"\n', "or be browser, got 'ftp://x'"),
        ("[index]\nhistory = 1\n", "history must be true or false, got 1"),
        ("[index.embedder]\nbatch_size = 0\n", "batch_size must be an integer of at least 1"),
        ('[index]\nexclude = "drafts/*"\n', "exclude must be a list of strings"),
    ],
)
def test_wrong_type_or_range_is_refused_naming_the_key(
    tmp_path: Path, text: str, expected: str
) -> None:
    assert expected in refused(tmp_path, text)


def test_a_key_pasted_into_api_key_env_is_never_quoted(tmp_path: Path) -> None:
    secret = "sk-" + "Q7ZK2M4XPB9TLD3Wq8rT"
    for table in ("[embedder]\n", f"[[providers]]\n{PROVIDER_OK}"):
        message = refused(tmp_path, f'{table}api_key_env = "{secret}"\n')
        assert "api_key_env must be the name of an environment variable" in message
        assert secret not in message


def test_api_key_in_a_provider_table_is_refused_without_quoting_it(tmp_path: Path) -> None:
    message = refused(tmp_path, f'[[providers]]\n{PROVIDER_OK}api_key = "sk-secret-value"\n')
    assert "api_key is not allowed" in message and "sk-secret-value" not in message


# ---------------------------------------------------------------------- values that load


def test_every_table_loads_into_typed_settings(tmp_path: Path) -> None:
    settings = load(
        tmp_path,
        "[server]\ncors_origins = [\"https://a.example\"]\nmax_question_chars = 300\n"
        '[embedder]\nbase_url = "http://127.0.0.1:9/v1"\napi_key_env = "EMB_KEY"\ntimeout = 4\n'
        "[answer]\nmax_steps = 2\n"
        '[social.templates.de]\ngreeting = "Hallo {site}"\n'
        f'[[providers]]\n{PROVIDER_OK}timeout = 7\neffort = "low"\n'
        '[index]\ntitle = "Frag"\nmax_section_chars = 900\nexclude = ["a/*"]\n'
        '[index.embedder]\nname = "none"\n',
    )
    assert settings.embedder == QueryEmbedderSettings("http://127.0.0.1:9/v1", "EMB_KEY", 4.0)
    assert isinstance(settings.embedder.timeout, float)
    assert settings.cors_origins == ("https://a.example",)
    assert settings.limits == Limits(max_question_chars=300)
    assert settings.answer == AnswerSettings(max_steps=2)
    assert settings.social_templates == {"de": {"greeting": "Hallo {site}"}}
    assert [(p.kind, p.model, p.timeout, p.effort) for p in settings.providers] == [
        ("openai", "m", 7.0, "low")
    ]
    assert settings.index.max_section_chars == 900 and settings.index.exclude == ("a/*",)
    assert settings.index.embedder.name == "none"
    assert settings.widget.title == "Frag"


def test_no_file_and_an_empty_file_give_the_schema_defaults(tmp_path: Path) -> None:
    assert load(tmp_path, "") == Settings(source=str(tmp_path / "docpilot.toml"))
    assert load_settings(None) == Settings()


def test_the_reference_pages_complete_example_loads(tmp_path: Path) -> None:
    page = (REFERENCE / "runtime-settings.md").read_text(encoding="utf-8")
    example = re.search(r'```toml title="docpilot.toml"\n(.*?)```', page, re.S)
    assert example is not None
    settings = load(tmp_path, example.group(1))
    assert [p.kind for p in settings.providers] == ["anthropic", "openai"]


def test_plugin_and_settings_file_share_one_check() -> None:
    with pytest.raises(OptionsError, match="unknown key 'palceholder'; did you mean placeholder"):
        build_options({"palceholder": "x"}, "mkdocs.yml plugins.docpilot")
    index, widget = build_options({"exclude": ["x/*"], "history": True}, "here")
    assert index.exclude == ("x/*",) and widget.history is True


# ---------------------------------------------------------------------- one source of defaults


def _dataclass_defaults(cls: Any) -> dict[str, Any]:
    instance = cls() if cls is not providers.ProviderSettings else cls("openai", "", "")
    return {f.name: getattr(instance, f.name) for f in fields(cls)}


def _schema_defaults(table: Any) -> dict[str, Any]:
    return {k: (dict(v) if isinstance(v, dict) else v) for k, v in table.defaults().items()}


@pytest.mark.parametrize(
    ("cls", "table", "not_in_settings"),
    [
        (AnswerSettings, ANSWER, set()),
        (QueryEmbedderSettings, EMBEDDER, set()),
        (WidgetOptions, WIDGET, set()),
        (IndexOptions, INDEX, {"embedder"}),  # an EmbedderSpec, held equal below
        (EmbedderSpec, INDEX_EMBEDDER, set()),
        (LimitSettings, LIMITS, set()),
        (RecordsSettings, RECORDS, set()),
        (HeaderSettings, HEADERS, {"page_policy"}),  # "" in the schema = the built-in policy
    ],
)
def test_dataclass_defaults_are_the_schemas(cls: Any, table: Any, not_in_settings: set[str]) -> None:
    ours = _dataclass_defaults(cls)
    assert set(ours) == set(table.names())
    schema = _schema_defaults(table)
    for name in set(ours) - not_in_settings:
        assert ours[name] == schema[name], name


def test_limits_and_provider_defaults_are_the_schemas() -> None:
    limits = _dataclass_defaults(Limits)
    for key in ("max_question_chars", "max_body_bytes"):
        assert limits[key] == SERVER[key].default
    ours = _dataclass_defaults(providers.ProviderSettings)
    assert set(ours) == set(PROVIDER.names())
    for key in PROVIDER.names():
        if not PROVIDER[key].required and key != "base_url":  # base_url: per kind
            assert ours[key] == PROVIDER[key].default, key
    assert PROVIDER["kind"].choices == providers.PROVIDER_KINDS
    assert PROVIDER["effort"].choices == ("", *providers.EFFORTS)
    assert PROVIDER["retries"].high == providers.MAX_RETRIES


def test_embedder_names_have_one_owner() -> None:
    assert EMBEDDER_NAMES is SCHEMA_EMBEDDER_NAMES
    assert INDEX_EMBEDDER["name"].choices == EMBEDDER_NAMES
    assert INDEX["embedder"].default == EmbedderSpec().name == "wordllama"
    assert INDEX["max_section_chars"].default == DEFAULT_MAX_SECTION_CHARS


def test_mkdocs_config_options_and_defaults_are_the_schemas() -> None:
    from mkdocs_docpilot.config import DocPilotConfig

    options = dict(DocPilotConfig._schema)
    assert list(options) == list(PLUGIN.names())
    for name, option in options.items():
        default = PLUGIN[name].default
        expected = list(default) if isinstance(default, tuple) else default
        assert option.default == expected, name
    assert set(PLUGIN.names()) == {"enabled"} | set(INDEX.names()) - {
        "site_name",
        "site_url",
    } | set(WIDGET.names())


def test_widget_js_defaults_are_the_schemas() -> None:
    script = (ROOT / "widget" / "src" / "config.js").read_text(encoding="utf-8")
    block = re.search(r"^const DEFAULTS = (\{.*?\});$", script, re.S | re.M)
    assert block is not None, "widget/src/config.js lost its DEFAULTS block"
    schema = {k: (list(v) if isinstance(v, tuple) else v) for k, v in WIDGET.defaults().items()}
    del schema["widget"]  # the build's switch; never sent to the page
    assert json.loads(block.group(1)) == schema


# ---------------------------------------------------------------------- generated reference


@pytest.mark.parametrize("page", ["runtime-settings.md", "plugin-configuration.md"])
def test_reference_tables_are_the_generated_ones(page: str) -> None:
    text = (REFERENCE / page).read_text(encoding="utf-8")
    assert "<!-- schema: " in text
    assert render_page(text) == text, (
        f"{page} differs from the schema: run "
        f"python -m docpilot_runtime.settings.docs example-site/docs/reference/{page}"
    )


def test_every_settings_table_is_on_the_reference_page() -> None:
    text = (REFERENCE / "runtime-settings.md").read_text(encoding="utf-8")
    for name, (table, _) in TABLES.items():
        for key in table.names():
            assert f"| `{key}` |" in text, f"[{name}] {key} is not documented"
    plugin = (REFERENCE / "plugin-configuration.md").read_text(encoding="utf-8")
    for key in PLUGIN.names():
        assert f"### {key}\n" in plugin, f"plugin option {key} has no section"


def test_readme_widget_example_uses_schema_keys_and_defaults() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"      endpoint: .*?```", readme, re.S)
    assert block is not None
    for line in block.group(0).splitlines():
        key = re.match(r"\s+(\w+):", line)
        if key:
            assert key.group(1) in WIDGET.names(), key.group(1)


def test_loading_settings_loads_neither_the_widget_installer_nor_mkdocs_nor_lxml() -> None:
    import subprocess
    import sys

    probe = (
        "import sys, docpilot_runtime.settings.load\n"
        "print(sorted(m for m in ('docpilot_runtime.browser.install', 'docpilot_runtime.browser.widget',"
        " 'docpilot_runtime.browser.worker',"
        " 'mkdocs', 'lxml') if m in sys.modules))\n"
    )
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]"
