"""Any OpenAI-compatible ``POST {base_url}/embeddings`` endpoint, in batches, with retries."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from docpilot_runtime.embedders.base import (
    EmbedderError,
    FloatArray,
    check_texts,
    l2_normalise_rows,
)
from docpilot_runtime.providers.upstream import (
    MissingKey,
    Scrubber,
    bearer_headers,
    key_from_env,
    request_timeout,
    retry_after_seconds,
    split_userinfo,
    upstream_error_message,
)
from docpilot_runtime.settings.embedder import EmbedderSpec

MAX_TRIES = 3
BACKOFF_SECONDS = 0.5  # before the 2nd try; doubled before the 3rd
MAX_RETRY_AFTER_SECONDS = 20.0  # cap on a server's Retry-After, so a build never stalls
MAX_CONNECT_TIMEOUT_SECONDS = 10.0  # a dead host should fail fast even with a long read timeout


class OpenAIEmbedder:
    """Embeds through an OpenAI-compatible endpoint at build time and for each question.

    The key is read once from the environment variable the spec names and is never put in a
    message; an empty api_key_env sends no key, for local servers that need none. Empty
    (whitespace-only) texts are not sent — OpenAI rejects an empty input — and get a zero row.
    `client` is the seam for callers that manage their own connection pool; without one the
    embedder owns a client, and ``close()`` (or ``with``) releases it.
    """

    needs_centering = False
    passage_chars = 0  # fast enough to read every section whole

    def __init__(self, spec: EmbedderSpec, client: httpx.Client | None = None) -> None:
        self.name = "openai"
        self.model = spec.model
        self.dims = spec.dims
        _check_spec(spec)
        # Userinfo in base_url becomes basic auth, so the URL that httpx logs carries none.
        base_url, self._auth = split_userinfo(spec.base_url)
        self._base_url = base_url.rstrip("/")
        self._url = f"{self._base_url}/embeddings"
        self._api_key_env = spec.api_key_env
        try:
            key = key_from_env(spec.api_key_env)
        except MissingKey as exc:
            raise EmbedderError(f"embedder 'openai': {exc}") from None
        self._scrub = Scrubber(key)
        self._headers = bearer_headers(key, {"Accept": "application/json"})
        if key:
            self._auth = None  # a bearer key and basic auth share one header: the key wins
        self._batch_size = spec.batch_size
        self._timeout = request_timeout(
            spec.timeout, min(MAX_CONNECT_TIMEOUT_SECONDS, spec.timeout)
        )
        self._owns_client = client is None
        self._client = client if client is not None else httpx.Client(timeout=self._timeout)

    def close(self) -> None:
        """Release the connection pool if this embedder created it."""
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> OpenAIEmbedder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def embed_passages(self, texts: Sequence[str]) -> FloatArray:
        """Embed documents in batches of batch_size: (n, dims) float32, rows L2-normalised."""
        batch = check_texts(self.name, texts)
        out = np.zeros((len(batch), self.dims), dtype=np.float32)
        to_send = [i for i, text in enumerate(batch) if text.strip()]
        for start in range(0, len(to_send), self._batch_size):
            positions = to_send[start : start + self._batch_size]
            out[positions] = self._embed_batch([batch[i] for i in positions], positions)
        return l2_normalise_rows(out)

    def embed_query(self, text: str) -> FloatArray:
        """Embed one question with one request: (dims,) float32, unit length."""
        vector: FloatArray = self.embed_passages([text])[0]
        return vector

    def _embed_batch(self, inputs: list[str], positions: list[int]) -> FloatArray:
        """POST one batch; return its vectors in input order. positions: the inputs' indexes."""
        what = f"inputs {positions[0]}..{positions[-1]}"
        payload = {"model": self.model, "input": inputs, "dimensions": self.dims}
        response = self._post_with_retries(payload, what)
        try:
            items = sorted(response.json()["data"], key=lambda item: int(item["index"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbedderError(
                f"embedder 'openai': {self._url} answered {what} without data[*].index and "
                "data[*].embedding"
            ) from exc
        if [int(item["index"]) for item in items] != list(range(len(inputs))):
            raise EmbedderError(
                f"embedder 'openai': {self._url} returned {len(items)} vectors whose indexes "
                f"do not match the {len(inputs)} {what}"
            )
        vectors = np.empty((len(inputs), self.dims), dtype=np.float32)
        for row, item in enumerate(items):
            vectors[row] = self._checked_vector(item.get("embedding"), positions[row])
        return vectors

    def _checked_vector(self, embedding: object, index: int) -> FloatArray:
        """One returned embedding as float32, refusing a wrong width or non-finite values."""
        if not isinstance(embedding, list):
            raise EmbedderError(
                f"embedder 'openai': input {index} came back as "
                f"{type(embedding).__name__}, not a list of floats",
                index=index,
            )
        if len(embedding) != self.dims:
            raise EmbedderError(
                f"embedder 'openai': input {index} came back with {len(embedding)} dims, "
                f"expected {self.dims} (setting dims; does model {self.model!r} support "
                "that width?)",
                index=index,
            )
        try:
            vector = np.array(embedding, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise EmbedderError(
                f"embedder 'openai': input {index} came back with non-numeric values",
                index=index,
            ) from exc
        if vector.shape != (self.dims,) or not np.isfinite(vector).all():
            raise EmbedderError(
                f"embedder 'openai': input {index} came back with nested, NaN or infinite values",
                index=index,
            )
        return vector

    def _post_with_retries(self, payload: dict[str, Any], what: str) -> httpx.Response:
        """POST, retrying 429, 5xx and connection failures, MAX_TRIES tries in all."""
        for attempt in range(1, MAX_TRIES + 1):
            backoff = BACKOFF_SECONDS * 2 ** (attempt - 1)
            try:
                response = self._client.post(
                    self._url,
                    json=payload,
                    headers=self._headers,
                    timeout=self._timeout,
                    auth=self._auth or httpx.USE_CLIENT_DEFAULT,
                )
            except httpx.TransportError as exc:
                if attempt == MAX_TRIES:
                    raise EmbedderError(
                        f"embedder 'openai': cannot reach {self._base_url} (base_url) after "
                        f"{attempt} tries: {type(exc).__name__}: {self._scrub(str(exc))}"
                    ) from exc
                time.sleep(backoff)
                continue
            if response.status_code == 200:
                return response
            retryable = response.status_code == 429 or response.status_code >= 500
            if retryable and attempt < MAX_TRIES:
                time.sleep(retry_after_seconds(response, backoff, MAX_RETRY_AFTER_SECONDS))
                continue
            raise EmbedderError(self._status_message(response, what, attempt))
        raise AssertionError("unreachable: the last try returns or raises")

    def _status_message(self, response: httpx.Response, what: str, tries: int) -> str:
        """Explain a failed status without ever echoing the key."""
        status = response.status_code
        head = f"embedder 'openai': {self._url} answered HTTP {status} for {what}"
        if tries > 1:
            head += f" after {tries} tries"
        if status in (401, 403):
            if self._api_key_env:
                return f"{head}: it rejected the key from {self._api_key_env} (api_key_env)"
            return f"{head}: it wants a key; set api_key_env to the variable holding one"
        if status == 404:
            return f"{head}: check base_url and model {self.model!r}"
        detail = upstream_error_message(response)
        return f"{head}: {self._scrub(detail)[:300]}"


def _check_spec(spec: EmbedderSpec) -> None:
    """Refuse settings the endpoint needs but the spec lacks, naming the setting."""
    if not spec.model:
        raise EmbedderError("embedder 'openai': model is required (e.g. 'text-embedding-3-small')")
    if spec.dims <= 0:
        raise EmbedderError(
            f"embedder 'openai': dims is required and must be positive, got {spec.dims}"
        )
    if not spec.base_url.startswith(("http://", "https://")):
        raise EmbedderError(
            "embedder 'openai': base_url must start with http:// or https://, got "
            f"{spec.base_url!r}"
        )
    if spec.batch_size < 1:
        raise EmbedderError(
            f"embedder 'openai': batch_size must be at least 1, got {spec.batch_size}"
        )
    if not spec.timeout > 0:
        raise EmbedderError(
            f"embedder 'openai': timeout must be positive seconds, got {spec.timeout}"
        )
