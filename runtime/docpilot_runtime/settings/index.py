"""Indexing options: one shape for the MkDocs plugin and for `docpilot index`'s `[index]`
table, checked the same way, with errors that name the key."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from docpilot_runtime.settings.embedder import EmbedderSpec
from docpilot_runtime.settings.keys import OptionsError
from docpilot_runtime.settings.tables import INDEX, INDEX_EMBEDDER

__all__ = [
    "DEFAULT_CACHE_DIR",
    "DEFAULT_MAX_SECTION_CHARS",
    "IndexOptions", "OptionsError", "embedder_spec", "index_options"]

DEFAULT_CACHE_DIR: str = INDEX["cache_dir"].default
# Here, not in units.py: that imports the HTML parser (lxml), which reading settings must not.
DEFAULT_MAX_SECTION_CHARS: int = INDEX["max_section_chars"].default


@dataclass(frozen=True)
class IndexOptions:
    """The build options; defaults are the schema's (`settings_schema.INDEX`)."""

    embedder: EmbedderSpec = field(default_factory=EmbedderSpec)
    max_section_chars: int = INDEX["max_section_chars"].default
    exclude: tuple[str, ...] = ()
    cache_dir: str = DEFAULT_CACHE_DIR
    site_name: str = ""  # "" = taken from the built HTML when the site is indexed
    site_url: str = ""
    tools: tuple[Mapping[str, Any], ...] = ()
    actions: tuple[Mapping[str, Any], ...] = ()
    llms_txt: bool = True  # write site/llms.txt and site/llms-full.txt (index/llms_txt.py)
    markdown_pages: bool = False  # and a Markdown copy of each indexed page (index.md)


def embedder_spec(value: Any, where: str) -> EmbedderSpec:
    """An embedder given as a name (``"none"``) or a table (``{name = "openai", ...}``)."""
    if isinstance(value, str):
        value = {"name": value}
    if not isinstance(value, Mapping):
        raise OptionsError(f"{where}: 'embedder' should be a name or a table, got {value!r}")
    if "api_key" in value or "key" in value:
        raise OptionsError(
            f"{where}: put the key in an environment variable and name it in 'api_key_env'"
        )
    checked = INDEX_EMBEDDER.check(
        {k: v for k, v in value.items() if v is not None}, f"{where} embedder"
    )
    return EmbedderSpec(**checked)


def index_options(values: Mapping[str, Any], where: str) -> IndexOptions:
    """Check a plain mapping (a TOML table, a plugin config) into IndexOptions."""
    kwargs = INDEX.check(values, where)
    if "embedder" in kwargs:
        kwargs["embedder"] = embedder_spec(kwargs["embedder"], where)
    for tool in kwargs.get("tools", ()):
        _check_declaration(tool, "tools", where, needs_endpoint=True)
    for action in kwargs.get("actions", ()):
        _check_declaration(action, "actions", where, needs_endpoint=False)
    return IndexOptions(**kwargs)


# Names the runtime's own tools use: a site tool may not take one over.
RESERVED_TOOL_NAMES = {"search_docs", "fetch_section", "expand_section", "list_pages", "answer"}


def _check_declaration(item: Any, key: str, where: str, needs_endpoint: bool) -> None:
    """A site tool or action: a name, an optional JSON Schema, and for a tool an
    http(s) endpoint of the site's own backend."""
    if not isinstance(item, Mapping) or not isinstance(item.get("name"), str) or not item["name"]:
        raise OptionsError(f"{where}: every entry of {key!r} needs a 'name' string, got {item!r}")
    name = item["name"]
    if key == "tools" and name in RESERVED_TOOL_NAMES:
        raise OptionsError(f"{where}: site tool name {name!r} is reserved for a built-in tool")
    parameters = item.get("parameters")
    if parameters is not None and not isinstance(parameters, Mapping):
        raise OptionsError(f"{where}: {key} {name!r}: 'parameters' must be a JSON Schema object")
    endpoint = item.get("endpoint")
    if needs_endpoint and not (
        isinstance(endpoint, str) and endpoint.startswith(("http://", "https://"))
    ):
        raise OptionsError(f"{where}: tool {name!r} needs an http(s) 'endpoint', got {endpoint!r}")
