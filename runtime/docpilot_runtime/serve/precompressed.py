"""Precompressed siblings of static files: ``pyodide.asm.wasm.br`` / ``.gz`` beside the file.

The build writes them for Pyodide's files (`pyodide_core.prepare`); `docpilot serve`
sends the smallest one the reader's browser accepts, with ``Content-Encoding``, so the
wasm crosses the wire at a third of its size without compressing on every request.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

# Preferred first; each is served only when the browser accepts it.
ENCODINGS = (("br", ".br"), ("gzip", ".gz"))


@dataclass(frozen=True)
class Variant:
    """The file to send for a request, and the Content-Encoding to send it with."""

    path: Path
    stat: os.stat_result
    encoding: str | None  # None: the file itself
    varies: bool  # siblings exist, so caches must key on Accept-Encoding


def accepted(header: str) -> set[str]:
    """The codings an ``Accept-Encoding`` header accepts (``q=0`` refuses; ``*`` is all)."""
    codings = set()
    for part in header.split(","):
        name, *params = (piece.strip() for piece in part.split(";"))
        quality = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if name and quality > 0:
            codings.add(name.lower())
    if "*" in codings:
        codings.update(coding for coding, _ in ENCODINGS)
    return codings


def choose(path: Path, stat: os.stat_result, accept_encoding: str) -> Variant:
    """The precompressed sibling of ``path`` the header accepts, else ``path`` itself."""
    wanted = accepted(accept_encoding)
    varies = False
    for coding, suffix in ENCODINGS:
        sibling = path.with_name(path.name + suffix)
        try:
            sibling_stat = sibling.stat()
        except OSError:
            continue
        varies = True
        if coding in wanted and sibling.is_file():
            return Variant(sibling, sibling_stat, coding, True)
    return Variant(path, stat, None, varies)
