"""Where the runtime embeds questions: the settings file's [embedder] table.

One type for the settings loader and the server's `Site` loader (``site_loader``), apart
from both so that loading a site never loads the settings loader.
"""

from __future__ import annotations

from dataclasses import dataclass

from docpilot_runtime.settings.tables import EMBEDDER

_DEFAULTS = EMBEDDER.defaults()


@dataclass(frozen=True)
class QueryEmbedderSettings:
    """For a site built with `embedder: openai`: where its query embedder is reached (the
    model and width come from the bundle). Defaults are the schema's."""

    base_url: str = _DEFAULTS["base_url"]
    api_key_env: str = _DEFAULTS["api_key_env"]  # the NAME of the variable
    timeout: float = _DEFAULTS["timeout"]
