"""The site's name as the built HTML states it, for greetings and refusals.

A generator writes the name into every page: `<meta property="og:site_name">` where the
theme emits it, else as the suffix of `<title>` ("Page - Site Name", MkDocs' and
Material's form, or "Page | Site Name"). The folder the site was built into says
nothing about its name, so it is never used.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Iterable

_OG_SITE_NAME = re.compile(
    r"<meta\s+(?=[^>]*\bproperty=[\"']og:site_name[\"'])[^>]*\bcontent=[\"']([^\"']*)[\"']",
    re.I,
)
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.I | re.S)
_SEPARATORS = (" - ", " – ", " — ", " | ")
_HEAD_BYTES = 65536  # both tags sit in <head>


def _text(raw: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", raw)).split())


def _title_suffix(title: str) -> str:
    cut = max((title.rfind(sep), sep) for sep in _SEPARATORS)
    return title[cut[0] + len(cut[1]) :].strip() if cut[0] > 0 else ""


def site_name_from_pages(pages: Iterable[bytes | str]) -> str:
    """The site's name from built pages: the first `og:site_name`, else the title suffix
    most pages share, else the home page's whole title when every title is bare; "" if
    the pages say nothing."""
    suffixes: Counter[str] = Counter()
    bare: list[str] = []
    for page in pages:
        head = page[:_HEAD_BYTES]
        text = head.decode("utf-8", "replace") if isinstance(head, bytes) else head
        og = _OG_SITE_NAME.search(text)
        if og and _text(og.group(1)):
            return _text(og.group(1))
        title = _TITLE.search(text)
        if title:
            whole = _text(title.group(1))
            suffix = _title_suffix(whole)
            if suffix:
                suffixes[suffix] += 1
            elif whole:
                bare.append(whole)
    if suffixes:
        return suffixes.most_common(1)[0][0]
    return bare[0] if bare and len(set(bare)) == 1 else ""
