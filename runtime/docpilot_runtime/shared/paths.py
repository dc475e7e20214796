"""The one page-path normaliser: every spelling of a page's URL made equal.

A reader's ``page`` (``/docs/guide/?x=1#setup``), a bundle page's URL, a link target in
a model's answer and a mount prefix all name pages in different spellings; each is
compared through ``page_key``. Pure Python, for the browser core.
"""

from __future__ import annotations

from urllib.parse import unquote, urlsplit


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


def published_under(site_url: str, prefix: str) -> str:
    """Where a bundle mounted at ``prefix`` ("/de/") is published: ``site_url`` under the
    prefix, since MkDocs under mkdocs-static-i18n or mike keeps the root's site_url in
    every language's and version's build; a site_url that already ends with the prefix
    (one MkDocs project per language) is kept. Without a site_url: the prefix itself."""
    if not site_url:
        return prefix
    if (urlsplit(site_url).path.rstrip("/") + "/").endswith(prefix):
        return site_url
    return site_url.rstrip("/") + prefix
