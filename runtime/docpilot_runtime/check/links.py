"""Which link targets an answer may keep: pages and anchors of this site's page set, or
an off-site URL that an excerpt of this turn carried.

Pure Python (standard library).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote

from docpilot_runtime.shared.paths import page_key

if TYPE_CHECKING:
    from docpilot_runtime.bundle.schema import Page

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]{1,31}:")
# Characters a destination may not carry even when its page exists.
_BAD_DESTINATION = re.compile(r"[\s\x00-\x1f\x7f\\`<>\"]")
_URL_SAFE = "/#:@!$&'*+,;=%-._~?"


def external_key(url: str) -> str:
    """An external URL compared without its fragment, a trailing slash, or case in the
    scheme and host."""
    url = url.strip().split("#", 1)[0]
    match = re.match(r"([A-Za-z][A-Za-z0-9+.\-]*:)(//[^/?]*)?(.*)", url, re.S)
    if not match:
        return url
    scheme, host, rest = match.group(1).lower(), (match.group(2) or "").lower(), match.group(3)
    if rest.endswith("/"):
        rest = rest[:-1]
    return scheme + host + rest


class LinkPolicy:
    """The page set and the allowed external URLs: which link targets may stay."""

    def __init__(self, pages: Sequence[Page], allowed_external: Collection[str]) -> None:
        self.pages: dict[str, Page] = {}
        for page in pages:
            self.pages.setdefault(page_key(page.url), page)
        self.allowed = {external_key(u) for u in allowed_external if isinstance(u, str)}

    def resolve(self, target: str) -> str | None:
        """The URL to emit for a link target, or None when it must become plain text."""
        target = target.strip()
        if not target or _BAD_DESTINATION.search(target):
            return None
        if _SCHEME.match(target) or target.startswith("//"):
            if external_key(target) in self.allowed:
                return quote(target, safe=_URL_SAFE)
            return None
        path, _, anchor = target.partition("#")
        path = path.split("?", 1)[0]
        page = self.pages.get(page_key(path))
        if page is None:
            return None
        anchor = unquote(anchor)
        if anchor and anchor not in page.ids:
            return None
        url = quote(page.url, safe=_URL_SAFE)
        return f"{url}#{quote(anchor, safe='-._~!$&*+,;=:@/?')}" if anchor else url
