"""The built site as static files: precompressed siblings, the types Pyodide needs, no
dotfiles."""

from __future__ import annotations

import mimetypes
import os
import re
from pathlib import Path

from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

from docpilot_runtime.serve import precompressed

# Browsers refuse to compile WebAssembly streamed with any other type, and module
# workers need a JavaScript type; the platform's mimetypes table may know neither.
STATIC_TYPES = {".wasm": "application/wasm", ".mjs": "text/javascript"}


class SiteFiles(StaticFiles):
    """StaticFiles with the content types the widget's Pyodide worker needs, sending a
    file's precompressed .br/.gz sibling when the browser accepts it (`precompressed`),
    that never serves a dotfile or anything under a dot-directory (`.env`, `.git/config`,
    an editor's swap file left in the site dir). Paths outside the directory are already
    refused by StaticFiles, symlinks included."""

    def lookup_path(self, path: str) -> tuple[str, os.stat_result | None]:
        parts = re.split(r"[/\\]", path)
        # "." is the site root itself; ".." is StaticFiles' to refuse (outside the dir).
        if any(part.startswith(".") and part not in (".", "..") for part in parts):
            return "", None
        return super().lookup_path(path)

    def file_response(
        self,
        full_path: str | os.PathLike[str],
        stat_result: os.stat_result,
        scope: Scope,
        status_code: int = 200,
    ) -> Response:
        accept = Headers(scope=scope).get("accept-encoding", "")
        variant = precompressed.choose(Path(full_path), stat_result, accept)
        response = super().file_response(variant.path, variant.stat, scope, status_code)
        if variant.encoding and "content-type" in response.headers:
            guessed = mimetypes.guess_type(str(full_path))[0] or "application/octet-stream"
            response.headers["content-type"] = guessed
            response.headers["content-encoding"] = variant.encoding
        if variant.varies:
            response.headers["vary"] = "Accept-Encoding"
        forced = STATIC_TYPES.get(Path(full_path).suffix.lower())
        if forced and "content-type" in response.headers:
            response.headers["content-type"] = forced
        return response


