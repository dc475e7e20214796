"""What the built pages load from other origins, read once at start-up, for the page policy.

A strict Content-Security-Policy that blocks a site's own badges, analytics or embedded
videos breaks the site silently: the reader sees a missing image, the owner sees nothing.
So `docpilot serve` reads the built HTML before it serves (`scan_site`) and finds the
origins each kind of resource comes from:

* ``<script src>`` and URLs written inside inline scripts (Material's Google Analytics
  adds ``https://www.googletagmanager.com/gtag/js`` from an inline loader) are scripts;
  a script's origin is also allowed for ``connect-src``, where it sends its beacons;
* stylesheets (``<link rel=stylesheet>``, ``@import``) are styles, and their origin may
  also serve the fonts and images they name (KaTeX or an icon font from a CDN);
* ``<img src/srcset>``, ``<video poster>``, icons, ``url(...)`` in styles are images;
  ``<iframe>`` frames, ``<audio>``/``<video>`` media, ``<form action>`` forms;
* services whose scripts reach further than the page says, as their own documentation
  gives it (`COMPANIONS`): Google Analytics' collection endpoints; the GitHub or GitLab API
  Material's repository widget reads; the CDN Material loads Mermaid from.

`PageSources.widen` adds them to the page policy's directives; `blocked_by` says what a
policy the owner fixed (``[headers] allow_page_sources = false``) would block, for the
start-up warning. Relative URLs, ``data:`` and ``blob:`` are the site's own and need
nothing. Only the origin is kept (scheme, host, port): never a path or a query.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

# The directives a resource kind falls under; each falls back to default-src.
SCRIPT, STYLE, IMG, FONT, CONNECT, FRAME, MEDIA, FORM = (
    "script-src", "style-src", "img-src", "font-src", "connect-src", "frame-src",
    "media-src", "form-action",
)
NO_FALLBACK = {FORM}  # form-action does not fall back to default-src

# (what a page holds, as a regex on its HTML) -> sources that service also needs.
COMPANIONS: tuple[tuple[re.Pattern[str], dict[str, tuple[str, ...]]], ...] = (
    # Google's documented policy for Google Analytics 4 (gtag.js).
    (
        re.compile(r"googletagmanager\.com"),
        {
            SCRIPT: ("https://*.googletagmanager.com",),
            IMG: ("https://*.google-analytics.com", "https://*.googletagmanager.com"),
            CONNECT: (
                "https://*.google-analytics.com",
                "https://*.analytics.google.com",
                "https://*.googletagmanager.com",
            ),
        },
    ),
    # Material's repository widget reads stars and forks from the host's API.
    (
        re.compile(r'<a\b[^>]*href="https://github\.com/[^"]*"[^>]*class="md-source"'),
        {CONNECT: ("https://api.github.com",)},
    ),
    (
        re.compile(r'<a\b[^>]*href="https://gitlab\.com/[^"]*"[^>]*class="md-source"'),
        {CONNECT: ("https://gitlab.com",)},
    ),
    # Material loads Mermaid from unpkg when a page has a diagram.
    (re.compile(r'class="mermaid"'), {SCRIPT: ("https://unpkg.com",)}),
)

_TAG = re.compile(r"<(script|link|img|source|iframe|frame|video|audio|track|form|embed)\b([^>]*)>",
                  re.I)
_ATTR = re.compile(r"""([\w:-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""")
_INLINE_SCRIPT = re.compile(r"<script\b([^>]*)>(.*?)</script>", re.I | re.S)
_STYLE_BLOCK = re.compile(r"<style\b[^>]*>(.*?)</style>", re.I | re.S)
_STYLE_ATTR = re.compile(r"""\bstyle\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.I)
_CSS_URL = re.compile(r"""url\(\s*['"]?([^'")\s]+)""", re.I)
_CSS_IMPORT = re.compile(r"""@import\s+(?:url\()?\s*['"]?([^'")\s;]+)""", re.I)
_URL_IN_SCRIPT = re.compile(r"""(?:https?:)?//[A-Za-z0-9.-]+(?::\d+)?(?=[/"'`?#])""")
_JS_TYPES = {"", "module", "text/javascript", "application/javascript"}
_LINK_KINDS = {
    "stylesheet": STYLE, "icon": IMG, "apple-touch-icon": IMG, "manifest": "manifest-src",
}
_PRELOAD_AS = {"script": SCRIPT, "style": STYLE, "font": FONT, "image": IMG, "fetch": CONNECT}
_TAG_ATTRS: dict[str, tuple[tuple[str, str], ...]] = {
    "script": (("src", SCRIPT),),
    "img": (("src", IMG), ("srcset", IMG)),
    "source": (("srcset", IMG),),  # a <source src> is media (set below)
    "iframe": (("src", FRAME),),
    "frame": (("src", FRAME),),
    "video": (("src", MEDIA), ("poster", IMG)),
    "audio": (("src", MEDIA),),
    "track": (("src", MEDIA),),
    "form": (("action", FORM),),
    "embed": (("src", "object-src"),),
}
MAX_PAGES_NAMED = 3  # pages named per blocked source in the warning


def origin_of(url: str) -> str | None:
    """The CSP source for an absolute URL (``https://host[:port]``), None for the site's own
    (relative, ``data:``, ``blob:``, a fragment) or anything else."""
    url = url.strip()
    if url.startswith("//"):
        url = "https:" + url
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname}{port}"


@dataclass
class PageSources:
    """Directive -> source -> the first pages (site paths) that need it."""

    found: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    pages: int = 0

    def add(self, directive: str, source: str, page: str) -> None:
        seen = self.found.setdefault(directive, {}).setdefault(source, [])
        if page not in seen and len(seen) < MAX_PAGES_NAMED:
            seen.append(page)

    def items(self) -> Iterator[tuple[str, str, list[str]]]:
        for directive in sorted(self.found):
            for source, pages in sorted(self.found[directive].items()):
                yield directive, source, pages

    def widen(self, policy: str) -> str:
        """``policy`` with every source found added to its directive (a directive the
        policy lacks starts from its default-src sources), unless the policy already
        allows it."""
        directives = parse_policy(policy)
        for directive, source, _pages in self.items():
            if allows(directives, directive, source):
                continue
            if directive not in directives:
                base = [] if directive in NO_FALLBACK else directives.get("default-src", [])
                directives[directive] = [s for s in base if s != "'none'"]
            directives[directive] = [s for s in directives[directive] if s != "'none'"]
            directives[directive].append(source)
        return "; ".join(" ".join([name, *sources]) for name, sources in directives.items())

    def blocked_by(self, policy: str) -> list[tuple[str, str, list[str]]]:
        """(directive, source, pages) for every source found that ``policy`` blocks."""
        directives = parse_policy(policy)
        return [item for item in self.items() if not allows(directives, item[0], item[1])]


def parse_policy(policy: str) -> dict[str, list[str]]:
    """A policy's directives in order, each with its sources."""
    out: dict[str, list[str]] = {}
    for part in policy.split(";"):
        words = part.split()
        if words and words[0].lower() not in out:
            out[words[0].lower()] = words[1:]
    return out


def allows(directives: dict[str, list[str]], directive: str, source: str) -> bool:
    """Whether the parsed policy lets ``directive`` load from the origin ``source``
    (exact origin, a ``*.`` host wildcard, a scheme, ``*``, a ``:*`` port, or a directive
    the policy leaves out with no default-src)."""
    if directive in directives:
        listed = directives[directive]
    elif directive in NO_FALLBACK or "default-src" not in directives:
        return True
    else:
        listed = directives["default-src"]
    scheme, _, host = source.partition("://")
    hostname = host.rsplit(":", 1)[0] if host.count(":") else host
    for item in listed:
        item = item.rstrip("/")
        if item == source or item == f"{scheme}:" or (item == "*" and scheme in ("http", "https")):
            return True
        wanted_scheme, sep, wanted_host = item.partition("://")
        if not sep or wanted_scheme != scheme:
            continue
        if wanted_host.endswith(":*"):
            wanted_host, host_only = wanted_host[:-2], hostname
        else:
            host_only = host
        if wanted_host.startswith("*.") and host_only.endswith(wanted_host[1:]):
            return True
        if wanted_host == host_only:
            return True
    return False


def _attributes(text: str) -> dict[str, str]:
    return {m[1].lower(): m[2] or m[3] or m[4] or "" for m in _ATTR.finditer(text)}


def _srcset(value: str) -> list[str]:
    return [candidate.strip().split(" ")[0] for candidate in value.split(",") if candidate.strip()]


def _tag_sources(tag: str, attrs: dict[str, str]) -> Iterator[tuple[str, str]]:
    """(directive, url) for the resources one tag loads."""
    if tag == "link":
        rels = set(attrs.get("rel", "").lower().split())
        href = attrs.get("href", "")
        for rel in rels:
            if rel in _LINK_KINDS:
                yield _LINK_KINDS[rel], href
        if "preload" in rels or "modulepreload" in rels:
            kind = _PRELOAD_AS.get(attrs.get("as", "script" if "modulepreload" in rels else ""))
            if kind:
                yield kind, href
        return
    for name, directive in _TAG_ATTRS.get(tag, ()):
        value = attrs.get(name, "")
        for url in _srcset(value) if name == "srcset" else [value]:
            yield directive, url
    if tag == "source" and attrs.get("src"):
        yield MEDIA, attrs["src"]


def scan_page(html: str, page: str, sources: PageSources) -> None:
    """Add what one page loads from other origins to ``sources``."""
    for match in _TAG.finditer(html):
        tag = match[1].lower()
        for directive, url in _tag_sources(tag, _attributes(match[2])):
            origin = origin_of(url)
            if origin is None:
                continue
            sources.add(directive, origin, page)
            if directive == SCRIPT:  # where a script sends what it collects
                sources.add(CONNECT, origin, page)
            elif directive == STYLE:  # a stylesheet's fonts and images, from its origin
                sources.add(FONT, origin, page)
                sources.add(IMG, origin, page)
    for match in _INLINE_SCRIPT.finditer(html):
        kind = _attributes(match[1]).get("type", "").lower()
        if "src" in _attributes(match[1]) or kind not in _JS_TYPES:
            continue  # JSON data blocks (ours, JSON-LD) load nothing
        for url in _URL_IN_SCRIPT.findall(match[2]):
            origin = origin_of(url)
            if origin is not None:
                sources.add(SCRIPT, origin, page)
                sources.add(CONNECT, origin, page)
    styles = [m[1] for m in _STYLE_BLOCK.finditer(html)]
    styles += [m[1] or m[2] for m in _STYLE_ATTR.finditer(html)]
    for css in styles:
        for url in _CSS_IMPORT.findall(css):
            if (origin := origin_of(url)) is not None:
                sources.add(STYLE, origin, page)
        for url in _CSS_URL.findall(css):
            if (origin := origin_of(url)) is not None:
                sources.add(IMG, origin, page)
    for pattern, needs in COMPANIONS:
        if pattern.search(html):
            for directive, extra in needs.items():
                for source in extra:
                    sources.add(directive, source, page)


def site_pages(site_dir: Path) -> Iterable[tuple[Path, str]]:
    """Every built page (``.html``) under the site as (file, site path), skipping
    dot-folders (never served) and symlinked folders (an alias of pages read already)."""
    for folder, dirs, files in os.walk(site_dir):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.endswith(".html"):
                path = Path(folder) / name
                rel = path.relative_to(site_dir).as_posix()
                url = "/" + rel.removesuffix("index.html")
                yield path, url


def scan_site(site_dir: str | os.PathLike[str]) -> PageSources:
    """What every built page under ``site_dir`` loads from other origins."""
    sources = PageSources()
    for path, url in site_pages(Path(site_dir)):
        try:
            html = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        scan_page(html, url, sources)
        sources.pages += 1
    return sources


def describe(items: Iterable[tuple[str, str, list[str]]]) -> str:
    """"img-src https://img.shields.io (/, /guide/); ..." for a log line."""
    return "; ".join(f"{d} {s} ({', '.join(p)})" for d, s, p in items)


__all__ = [
    "PageSources", "allows", "describe", "origin_of", "parse_policy", "scan_page", "scan_site",
]
