"""The plugin's options under `- docpilot:` in mkdocs.yml.

Names and defaults come from `docpilot_runtime.settings.tables.PLUGIN` (the one source;
`tests/settings/test_settings.py` holds this class equal to it). MkDocs checks the types here;
DocPilot checks the rest (ranges, names, URL schemes) with the same schema as the
settings file, so the two cannot disagree.
"""

from __future__ import annotations

from typing import Any

from docpilot_runtime.settings.tables import PLUGIN
from mkdocs.config import config_options as c
from mkdocs.config.base import Config


def _default(name: str) -> Any:
    value = PLUGIN[name].default
    return list(value) if isinstance(value, tuple) else value


class DocPilotConfig(Config):  # type: ignore[no-untyped-call]
    enabled = c.Type(bool, default=_default("enabled"))
    # A name (settings.tables.EMBEDDER_NAMES) or a table: checked by docpilot_runtime.
    embedder = c.Type((str, dict), default=_default("embedder"))
    max_section_chars = c.Type(int, default=_default("max_section_chars"))
    exclude = c.ListOfItems(c.Type(str), default=_default("exclude"))
    cache_dir = c.Type(str, default=_default("cache_dir"))
    tools = c.ListOfItems(c.Type(dict), default=_default("tools"))
    actions = c.ListOfItems(c.Type(dict), default=_default("actions"))
    llms_txt = c.Type(bool, default=_default("llms_txt"))
    markdown_pages = c.Type(bool, default=_default("markdown_pages"))

    # The reader's widget. Everything here is published in every page: no secrets.
    widget = c.Type(bool, default=_default("widget"))
    endpoint = c.Type(str, default=_default("endpoint"))
    title = c.Type(str, default=_default("title"))
    placeholder = c.Type(str, default=_default("placeholder"))
    position = c.Choice(PLUGIN["position"].choices, default=_default("position"))
    suggested_questions = c.ListOfItems(c.Type(str), default=_default("suggested_questions"))
    support_url = c.Type(str, default=_default("support_url"))
    history = c.Type(bool, default=_default("history"))
    require_consent = c.Type(bool, default=_default("require_consent"))
    max_question_chars = c.Type(int, default=_default("max_question_chars"))
    language = c.Type(str, default=_default("language"))
    strings = c.DictOfItems(c.Type(str), default=_default("strings"))
    pyodide_url = c.Type(str, default=_default("pyodide_url"))
    search_handoff = c.Type(bool, default=_default("search_handoff"))
    ask_about_page = c.Type(bool, default=_default("ask_about_page"))
    copy_page = c.Type(bool, default=_default("copy_page"))
    ai_notice = c.Type(bool, default=_default("ai_notice"))
