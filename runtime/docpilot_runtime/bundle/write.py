"""Writing a bundle: the msgpack map, the static index derived from it, atomic files."""

from __future__ import annotations

import base64
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from docpilot_runtime.bundle.schema import (
    FORMAT,
    LEXICAL_BLOCKS,
    STATIC_FORMAT,
    VERSION,
    Bundle,
    Gate,
    GateParams,
    LexicalBlock,
    UnitRecord,
)


def _gate_params_map(params: GateParams) -> dict[str, Any]:
    return {
        "weights": dict(params.weights),
        "anchors": {
            name: {"uncovered": a.uncovered, "covered": a.covered}
            for name, a in params.anchors.items()
        },
        "threshold": params.threshold,
        "samples": dict(params.samples),
    }


def gate_map(gate: Gate) -> dict[str, Any]:
    out: dict[str, Any] = {"method": gate.method}
    for mode in ("lexical", "hybrid"):
        params = getattr(gate, mode)
        if params is not None:
            out[mode] = _gate_params_map(params)
    return out


def lexical_map(block: LexicalBlock) -> dict[str, Any]:
    return {
        "variant": block.variant,
        "params": {
            "k1": block.params.k1,
            "b": block.params.b,
            "delta": block.params.delta,
            "boosts": dict(block.params.boosts),
        },
        "count": block.count,
        "avg_length": block.avg_length,
        "doc_dtype": block.doc_dtype,
        "doc_encoding": block.doc_encoding,
        "terms": block.terms,
        "offsets": block.offsets,
        "docs": block.docs,
        "tfs": block.tfs,
        "lengths": block.lengths,
    }


def units_map(units: Sequence[UnitRecord]) -> dict[str, list[Any]]:
    return {
        "id": [u.id for u in units],
        "url": [u.url for u in units],
        "title": [u.title for u in units],
        "breadcrumb": [list(u.breadcrumb) for u in units],
        "text": [u.text for u in units],
        "page": [u.page for u in units],
    }


def bundle_map(bundle: Bundle) -> dict[str, Any]:
    """The bundle as plain msgpack values, keys in a fixed order (equal bundles give
    equal bytes)."""
    embedder = bundle.embedder
    vectors = bundle.vectors
    return {
        "format": FORMAT,
        "version": VERSION,
        "generator": bundle.generator,
        "site": {"name": bundle.site.name, "url": bundle.site.url},
        "embedder": None
        if embedder is None
        else {
            "name": embedder.name,
            "model": embedder.model,
            "dims": embedder.dims,
            "center": embedder.center,
        },
        "vectors": None
        if vectors is None
        else {
            "layout": vectors.layout,
            "dims": vectors.dims,
            "count": vectors.count,
            "bits": vectors.bits,
        },
        "pages": [{"url": p.url, "title": p.title, "ids": list(p.id_order)} for p in bundle.pages],
        "units": units_map(bundle.units),
        "lexical": lexical_map(bundle.lexical),
        "gate": gate_map(bundle.gate),
        "tools": [dict(t) for t in bundle.tools],
        "actions": [dict(a) for a in bundle.actions],
    }


def encode_bundle(bundle: Bundle) -> bytes:
    """The bundle's msgpack bytes, deterministic for equal bundles."""
    import msgpack  # not in the browser, which reads the static index

    return msgpack.packb(bundle_map(bundle), use_bin_type=True)  # type: ignore[no-any-return]


def encode_static(bundle: Bundle) -> bytes:
    """The static index (``docpilot/static.json``): the bundle minus its vectors, as
    UTF-8 JSON with binary blocks in base64, plus the bundle's hash so static results
    name the same bundle as the server's. Equal bundles give equal bytes."""
    data = bundle_map(bundle)
    data["format"] = STATIC_FORMAT
    data["bundle_hash"] = bundle.hash
    data["embedder"] = None
    data["vectors"] = None
    data["gate"] = {k: v for k, v in data["gate"].items() if k != "hybrid"}
    lexical = data["lexical"]
    for key in LEXICAL_BLOCKS:
        lexical[key] = base64.b64encode(lexical[key]).decode("ascii")
    text = json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return text.encode("utf-8")


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename, so a reader
    (or a failed build) never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


