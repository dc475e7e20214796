"""Serving the site and its API under a path prefix (`docpilot serve --root-path /docs`).

A reverse proxy that publishes the runtime at ``https://example.com/docs/`` either strips
the prefix before it forwards (nginx ``proxy_pass http://runtime/;``, Traefik's
StripPrefix) or passes the path through as it came (``proxy_pass http://runtime;``).
`RootPath` accepts both: a path that already starts with the prefix is taken as it is,
any other gets the prefix put in front; either way the ASGI scope carries ``root_path``
and routing sees the path below it (``/api/ask``). The one ambiguity: with a stripping
proxy, a page of the site's own top-level folder named like the prefix
(``/docs/docs/...`` published) would be read as the prefix; pick another prefix then.
"""

from __future__ import annotations

import re

from starlette.types import ASGIApp, Receive, Scope, Send

_SEGMENT = re.compile(r"[A-Za-z0-9._~!$&'()*+,;=:@%-]+")


class RootPathError(ValueError):
    """A --root-path that is not a URL path."""


def normalise_root_path(value: str, where: str = "--root-path") -> str:
    """``""`` for none, else ``/a/b``: one leading slash, no trailing one; raises
    `RootPathError` naming ``where`` for anything that is not a plain URL path."""
    text = value.strip().strip("/")
    if not text:
        return ""
    parts = text.split("/")
    if any(part in ("", ".", "..") or not _SEGMENT.fullmatch(part) for part in parts):
        raise RootPathError(f"{where}: {value!r} is not a URL path such as /docs")
    return "/" + "/".join(parts)


def route_path(scope: Scope) -> str:
    """The request path below the scope's ``root_path`` (what routes match)."""
    return path_below(scope.get("path", ""), scope.get("root_path", ""))


def path_below(path: str, root: str) -> str:
    """``path`` as seen from below ``root``: the reader's page ``/docs/guide/`` as the
    bundle knows it, ``/guide/``; a path outside the prefix is left as it is."""
    if root and (path == root or path.startswith(root + "/")):
        return path[len(root) :] or "/"
    return path


class RootPath:
    """ASGI middleware: every HTTP and WebSocket scope served under ``root``."""

    def __init__(self, app: ASGIApp, root: str) -> None:
        self.app = app
        self.root = normalise_root_path(root)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        root = self.root
        if not root or scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        path: str = scope.get("path", "/")
        raw: bytes = scope.get("raw_path") or path.encode()
        if not (path == root or path.startswith(root + "/")):  # the proxy stripped it
            path, raw = root + path, root.encode() + raw
        await self.app({**scope, "root_path": root, "path": path, "raw_path": raw}, receive, send)


__all__ = ["RootPath", "RootPathError", "normalise_root_path", "path_below", "route_path"]
