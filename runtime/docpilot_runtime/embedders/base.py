"""The shapes every embedder shares: its spec, its error, its protocol, two input/output rules."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float32]




class EmbedderError(Exception):
    """Raised with a message naming the embedder, the setting or the input index at fault."""

    index: int | None

    def __init__(self, message: str, *, index: int | None = None) -> None:
        super().__init__(message)
        # Set when one input text is at fault (e.g. a vector of the wrong width), so the
        # indexer can name the page and section instead of only the batch.
        self.index = index


class Embedder(Protocol):
    """The one shape the indexer and the runtime rely on."""

    name: str
    model: str
    dims: int
    needs_centering: bool  # True: take sign bits after subtracting the corpus mean vector
    # The leading characters of each passage the indexer gives it (0: the whole text). A
    # slow embedder reads a section's opening, where its subject is named, and the build
    # stays within minutes (``passage_prefix``); the cache key hashes that prefix.
    passage_chars: int

    def embed_passages(self, texts: Sequence[str]) -> FloatArray:
        """Embed documents: (n, dims) float32, rows L2-normalised."""
        ...

    def embed_query(self, text: str) -> FloatArray:
        """Embed one question: (dims,) float32, L2-normalised."""
        ...


def check_texts(embedder: str, texts: Sequence[str]) -> list[str]:
    """Return `texts` as a list, refusing a bare string (it would embed each character)."""
    if isinstance(texts, str):
        raise EmbedderError(
            f"embedder {embedder!r}: embed_passages takes a sequence of texts, got one str"
        )
    checked = list(texts)
    for index, text in enumerate(checked):
        if not isinstance(text, str):
            raise EmbedderError(
                f"embedder {embedder!r}: input {index} is {type(text).__name__}, not str",
                index=index,
            )
    return checked


def l2_normalise_rows(matrix: FloatArray) -> FloatArray:
    """Scale rows to unit length in place; an all-zero row (empty text) stays zero, not NaN."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    np.divide(matrix, norms, out=matrix, where=norms > 0)
    return matrix


def passage_prefix(text: str, chars: int) -> str:
    """The first ``chars`` characters of ``text`` (all of it when ``chars`` is 0 or the text
    is shorter), cut back to the last space when one falls in the final fifth, so a
    word is not split in two."""
    if chars <= 0 or len(text) <= chars:
        return text
    cut = text[:chars]
    space = cut.rfind(" ")
    return cut[:space] if space >= chars * 4 // 5 else cut
