"""The server's `Site`: a bundle loaded with the numpy scorers and its query embedder.

The turn core (``retrieval``) is numpy-free; this is where the server plugs in the
numpy BM25+ scorer and the dense scan. It takes the ``[embedder]`` table alone
(`QueryEmbedderSettings`), not the runtime's whole settings, so importing it drags in
nothing else.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from docpilot_runtime.bundle.read import load_bundle
from docpilot_runtime.bundle.schema import Bundle
from docpilot_runtime.embedders import Embedder, EmbedderError, load_embedder
from docpilot_runtime.retrieve.params import DEFAULT_PARAMS, RetrievalParams
from docpilot_runtime.retrieve.search import Searcher
from docpilot_runtime.retrieve.site import Site
from docpilot_runtime.scoring.dense import DenseChannel, DenseIndex
from docpilot_runtime.scoring.lexical_numpy import NumpyLexical
from docpilot_runtime.settings.embedder import EmbedderSpec, QueryEmbedderSettings

log = logging.getLogger("docpilot.retrieval")
DEFAULT_EMBEDDER = QueryEmbedderSettings()  # the [embedder] defaults


def query_embedder(
    bundle: Bundle, hosted: QueryEmbedderSettings = DEFAULT_EMBEDDER
) -> tuple[Embedder | None, str | None]:
    """The embedder that matches the bundle's, or None (lexical mode) with the reason."""
    info = bundle.embedder
    if info is None:
        return None, "the bundle has no embedder (embedder: none)"
    is_hosted = info.name == "openai"
    spec = EmbedderSpec(
        name=info.name,
        model=info.model,
        dims=info.dims,
        base_url=hosted.base_url if is_hosted else "",
        api_key_env=hosted.api_key_env if is_hosted else "",
        timeout=hosted.timeout,
    )
    try:
        return load_embedder(spec), None
    except EmbedderError as exc:
        log.warning("%s: query embedder unavailable (%s); lexical mode", bundle.path, exc)
        return None, str(exc)


def dense_index(bundle: Bundle) -> DenseIndex | None:
    """The bundle's vectors, viewed in place, or None when it has none."""
    if bundle.vectors is None or bundle.embedder is None:
        return None
    dims = bundle.vectors.dims
    center = bundle.embedder.center
    return DenseIndex.from_bytes(
        bundle.vectors.bits,
        bundle.vectors.count,
        dims,
        np.frombuffer(center, dtype="<f4") if center else np.zeros(dims, np.float32),
    )


def site_from_bundle(
    bundle: Bundle,
    prefix: str = "/",
    hosted: QueryEmbedderSettings = DEFAULT_EMBEDDER,
    params: RetrievalParams = DEFAULT_PARAMS,
) -> Site:
    """A loaded bundle as the server's Site (numpy scorers, query embedder if any)."""
    dense = dense_index(bundle)
    channel = None
    error = None
    if dense is not None:
        embedder, error = query_embedder(bundle, hosted)
        if embedder is not None:
            channel = DenseChannel(dense, embedder.embed_query)
    searcher = Searcher(NumpyLexical(bundle.lexical), channel, params, bundle.units)
    return Site(prefix=prefix, bundle=bundle, searcher=searcher, embedder_error=error)


def load_site(
    site_dir: Path,
    prefix: str = "/",
    hosted: QueryEmbedderSettings = DEFAULT_EMBEDDER,
    params: RetrievalParams = DEFAULT_PARAMS,
) -> Site:
    """Load and check one site's bundle and build its indexes (vectors stay in place)."""
    return site_from_bundle(load_bundle(site_dir), prefix, hosted, params)
