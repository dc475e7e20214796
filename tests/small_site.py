"""A small built site, written as HTML and indexed by `docpilot index`'s own function
(no MkDocs run): quick to build, with unit ids a scripted model can cite."""

from __future__ import annotations

from pathlib import Path

from docpilot_runtime.api import index_built_site
from docpilot_runtime.settings.index import IndexOptions
from docpilot_runtime.settings.widget import WidgetOptions

BUNDLE = "docpilot/bundle.msgpack"

INSTALL = ("install", "Installation", "Install the package with pip, then add the plugin "
           "to mkdocs.yml under plugins and build the site again.")
CACHE = ("caching", "Caching", "The embedding cache keeps section vectors between builds, "
         "keyed by a hash of each section's text.")
PROXY = ("proxies", "Reverse proxies", "Behind a reverse proxy, list its address in "
         "trusted_proxies so X-Forwarded-For names the reader.")
INSTALL_QUESTION = "How do I install the package with pip?"
INSTALL_UNIT = "/install/#install"

Page = tuple[str, str, str]  # (slug, title, text)


def page_html(slug: str, title: str, text: str) -> str:
    return (f'<!doctype html><html lang="en"><head><title>{title} - Small</title></head>'
            f'<body><main><h1 id="{slug}">{title}</h1><p>{text}</p>'
            f'<h2 id="{slug}-more">More on {title.lower()}</h2><p>{text} {text}</p>'
            "</main></body></html>")


def build_small_site(folder: Path, cache: Path, pages: list[Page]) -> bytes:
    """Write ``pages`` under ``folder``, index them; the bundle's bytes."""
    for slug, title, text in pages:
        (folder / slug).mkdir(parents=True, exist_ok=True)
        (folder / slug / "index.html").write_text(page_html(slug, title, text), encoding="utf-8")
    index_built_site(folder, IndexOptions(cache_dir=str(cache)), WidgetOptions(widget=False))
    return (folder / BUNDLE).read_bytes()
