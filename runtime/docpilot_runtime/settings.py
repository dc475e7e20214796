"""Runtime settings: one TOML file (`--config FILE` or `DOCPILOT_CONFIG`).

Secrets never live here: providers and hosted embedders name the *environment
variable* that holds their key (`api_key_env`). Unknown tables and keys are errors
that name the file and the key, so a typo does not silently fall back to a default.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .index.options import IndexOptions, OptionsError, index_options

CONFIG_ENV = "DOCPILOT_CONFIG"


class SettingsError(ValueError):
    """A settings file that cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class Settings:
    source: str = ""  # the file the settings came from, "" for defaults
    index: IndexOptions = field(default_factory=IndexOptions)
    raw: dict[str, Any] = field(default_factory=dict)


_TABLES = {"index", "server", "providers", "embedder", "answer", "social", "sites"}


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
    try:
        index = index_options(raw.get("index", {}), f"{file} [index]")
    except OptionsError as exc:
        raise SettingsError(str(exc)) from None
    return Settings(source=str(file), index=index, raw=raw)
