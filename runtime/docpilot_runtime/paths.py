"""The one page-path normaliser: every spelling of a page's URL made equal.

A reader's ``page`` (``/docs/guide/?x=1#setup``), a bundle page's URL, a link target in
a model's answer and a mount prefix all name pages in different spellings; each is
compared through ``page_key``. Pure Python, for the browser core.
"""

from __future__ import annotations

from urllib.parse import unquote


def page_path(url: str) -> str:
    """``url`` without its query and fragment."""
    return url.split("#", 1)[0].split("?", 1)[0]


def page_key(url: str, prefix: str = "/") -> str:
    """A page's key: query, fragment and the site's mount ``prefix`` dropped; leading and
    trailing slashes, ``index.html``/``index.md``, ``.html``/``.md`` suffixes and dot
    segments made equal. ``/docs/guide/index.html#x`` under ``/docs/`` is ``guide``."""
    path = page_path(url)
    if prefix not in ("", "/") and path.startswith(prefix):
        path = "/" + path[len(prefix) :]
    segments: list[str] = []
    for segment in unquote(path).split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if segments:
                segments.pop()
            continue
        segments.append(segment)
    if segments and segments[-1] in ("index.html", "index.htm", "index.md"):
        segments.pop()
    elif segments:
        for suffix in (".html", ".htm", ".md"):
            if segments[-1].endswith(suffix) and len(segments[-1]) > len(suffix):
                segments[-1] = segments[-1][: -len(suffix)]
                break
    return "/".join(segments)
