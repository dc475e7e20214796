"""The `docpilot` MkDocs plugin: events only; the work is in `docpilot_runtime`.

After the build has written every page, hand the pages (with their URLs and the
front-matter exclusions) to the indexer, which writes `site/docpilot/bundle.msgpack`.
Excluded pages also get `<meta name="docpilot" content="noindex">`, so a later
`docpilot index site/` honours the same exclusion.

Under `--dirty` (`mkdocs build --dirty`, `mkdocs serve --dirty`) MkDocs rebuilds only the
edited pages; the pages it left alone are read back from the site dir as they were last
written (with their noindex tag), so the bundle still covers the whole site and the
embedding cache keeps every unit.

Under `mkdocs serve` (``on_startup`` says so) each rebuild reuses the gate the session's
first build calibrated and writes no .gz/.br siblings of the widget's text files: a
preview's bundle, never recorded as the last build (``index_site``'s ``serve``).

The reader's widget: every page gets its configuration (a JSON script block) and a
module script tag before `</body>`, with a relative path so the site works under a
sub-path; the widget's files join MkDocs' file collection (other plugins see them), and
the bundle and Pyodide are written into `site/docpilot/` after the build.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from docpilot_runtime.api import index_built_site
from docpilot_runtime.browser.install import BrowserRuntimeError
from docpilot_runtime.browser.widget import (
    WIDGET_DIR,
    inject,
    script_src,
    widget_config,
    widget_files,
    widget_tags,
)
from docpilot_runtime.embedders import Embedder, EmbedderError, load_embedder
from docpilot_runtime.index.build import BuildError, PageSource, is_excluded, page_url
from docpilot_runtime.index.cache import resolve_cache_dir
from docpilot_runtime.index.llms_manifest import link_other_bundles
from docpilot_runtime.index.manifest import bundle_entry, read_manifest, record_bundle
from docpilot_runtime.settings.index import IndexOptions
from docpilot_runtime.settings.keys import OptionsError
from docpilot_runtime.settings.load import build_options
from docpilot_runtime.settings.tables import PLUGIN
from docpilot_runtime.settings.widget import WidgetOptions
from docpilot_runtime.shared.paths import published_under
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin, get_plugin_logger
from mkdocs.structure.files import File, Files
from mkdocs.structure.nav import Navigation, Section
from mkdocs.structure.pages import Page

from .config import DocPilotConfig

# MkDocs' plugin logger: every message starts with "docpilot: ". Warnings are for what is
# misconfigured (a --strict build fails on them); notes about one page are info.
log = get_plugin_logger("docpilot")
# The runtime's own messages name DocPilot (they are printed bare by `docpilot index`);
# MkDocs' plugin logger already starts every line with "docpilot: ".
_NAMED = re.compile(r"^(?:docpilot:\s*|DocPilot:?\s+)", re.I)


def unnamed(say: Callable[[str], None]) -> Callable[[str], None]:
    """``say`` without a leading "docpilot: " / "DocPilot " in the message."""
    return lambda message: say(_NAMED.sub("", message, count=1))

NOINDEX_META = '<meta name="docpilot" content="noindex">'
_NOINDEX = NOINDEX_META.encode()
WHERE = "mkdocs.yml plugins.docpilot"


def _excluded_by_front_matter(page: Page) -> bool:
    """``docpilot: {exclude: true}`` (or ``docpilot: false``); else Material's ``search:
    {exclude: true}``: a page kept out of the site's search is kept out of the assistant,
    unless its own ``docpilot: {exclude: false}`` says otherwise."""
    value = page.meta.get("docpilot")
    if value is False:
        return True
    if isinstance(value, dict) and "exclude" in value:
        return bool(value["exclude"])
    search = page.meta.get("search")
    return isinstance(search, dict) and bool(search.get("exclude"))


def nav_outline(items: list[Any], section: str) -> list[tuple[str, str]]:
    """(top-level nav section title, page url) in nav order, for llms.txt's H2 sections."""
    out: list[tuple[str, str]] = []
    for item in items:
        if isinstance(item, Page) and item.file is not None:
            out.append((section, page_url(item.file.dest_uri)))
        elif isinstance(item, Section):
            out.extend(nav_outline(item.children, section or str(item.title)))
    return out


def pages_left_unbuilt(
    site_dir: Path,
    site_pages: list[tuple[str, str]],
    built: list[PageSource],
    label: Callable[[str], str],
    nav_order: dict[str, int],
    prefix: str = "",
) -> list[PageSource]:
    """The site's pages MkDocs did not rebuild this time, as their last build wrote them.

    ``site_pages`` is every documentation page as (source path, built path); a page
    whose built file is missing is not on the site, so it is left out. ``prefix`` is
    the language's folder ("de/"): urls are relative to it, as in its own bundle.
    """
    seen = {p.url for p in built}
    kept = []
    for src, dest in site_pages:
        url = page_url(dest.removeprefix(prefix))
        if url in seen:
            continue
        path = site_dir / dest
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            continue
        kept.append(
            PageSource(
                path=path,
                url=url,
                excluded=_NOINDEX in raw,
                src=src,
                label=label(src),
                nav_index=nav_order.get(src),
            )
        )
    return kept


def empty_index_warning(pages: list[PageSource], folder: str, exclude: Sequence[str]) -> str:
    """Why an index ended up empty, so the owner can fix it before readers meet refusals."""
    where = f"the '{folder.rstrip('/')}' pages" if folder else "the site"
    excluded = sum(p.excluded or is_excluded(p, exclude) for p in pages)
    cause = (
        f"{excluded} of {len(pages)} pages are excluded (front matter or `exclude`) and "
        "the rest have no text"
        if pages
        else "no pages were built"
    )
    return f"the index of {where} is empty: {cause}; the assistant will refuse every question"


# Under `mkdocs serve` the widget's probe of /api/health (is a runtime there?) would be a 404
# in the dev server's log on every page load. This answers it, as "no runtime": not JSON,
# so the widget falls back to answering in the browser, as it does on a 404.
PREVIEW_HEALTH = (
    "no DocPilot runtime here: this is `mkdocs serve` (the widget answers in the browser)\n"
)


def write_preview_health(folder: Path) -> None:
    """``folder/api/health`` for the dev server, unless the site has something there (a
    page of its own at api/health/)."""
    path = folder / "api" / "health"
    if path.is_dir() or (path.exists() and path.read_text(errors="replace") != PREVIEW_HEALTH):
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(PREVIEW_HEALTH, encoding="utf-8")


# Material's offline plugin builds a site to be opened from disk (file://), where browsers
# refuse module scripts, workers and fetches: the widget cannot start there. The build says
# so, and each page says it in the browser's console instead of staying silent.
OFFLINE_WARNING = (
    "Material's offline plugin is on: pages opened from disk (file://) cannot start the "
    "assistant, because browsers refuse module scripts, workers and downloads from file:// "
    "pages; the widget works wherever the site is served over HTTP. For a build meant only "
    "to be opened from disk, set `widget: false` under plugins.docpilot"
)
OFFLINE_NOTE = (
    '<script>if (location.protocol === "file:") console.warn('
    '"DocPilot: the assistant needs this site served over HTTP; opened from a file '
    '(file://) it cannot start.");</script>\n'
)


def offline_plugin_on(config: MkDocsConfig) -> bool:
    """Whether Material's offline plugin is enabled in this build."""
    return any(
        type(plugin).__module__.startswith("material.plugins.offline")
        and bool(getattr(plugin, "config", {}).get("enabled", True))
        for plugin in config.plugins.values()
    )


def docs_version() -> str:
    """The version being built when mike deploys one (it sets ``MIKE_DOCS_VERSION`` for
    the ``mkdocs build`` it runs into the version's folder), else ""."""
    return os.environ.get("MIKE_DOCS_VERSION", "").strip()


def language_build(config: MkDocsConfig) -> tuple[str, str] | None:
    """(folder, language) when mkdocs-static-i18n is building one of the site's languages:
    ("", "en") for the default one at the site root, ("de/", "de") for the others."""
    i18n = config.plugins.get("i18n")
    current = getattr(i18n, "current_language", None)
    if not current:
        return None
    default = getattr(i18n, "default_language", None)
    return ("" if current == default else f"{current}/", str(current))


class DocPilotPlugin(BasePlugin[DocPilotConfig]):  # type: ignore[no-untyped-call]
    def __init__(self) -> None:
        self.pages: list[PageSource] = []
        self.site_pages: list[tuple[str, str]] = []
        self.nav_order: dict[str, int] = {}  # source path -> place in the nav
        self.docs_prefix = Path("docs")
        self.language: tuple[str, str] | None = None  # (folder, language) of an i18n build
        self.options: IndexOptions | None = None
        self.widget: dict[str, Any] | None = None
        self.widget_options = WidgetOptions(widget=False)
        self._embedder: Embedder | None = None
        self._embedder_key: object = None
        self.nav: list[tuple[str, str]] = []
        self.serve = False
        self.offline = False  # Material's offline plugin is on (see OFFLINE_WARNING)
        self.widget_in_files = False  # the widget's files are in MkDocs' collection

    def on_startup(self, *, command: str, dirty: bool) -> None:
        # Defining on_startup keeps this object alive across `mkdocs serve` rebuilds,
        # so the embedding model is loaded once.
        self.serve = command == "serve"  # rebuilds reuse the last gate calibration

    def on_config(self, config: MkDocsConfig) -> MkDocsConfig | None:
        if not self.config.enabled:
            return config
        # Unknown options stay MkDocs' warning (an error under --strict), as documented.
        values: dict[str, Any] = {
            k: v for k, v in self.config.items() if k in PLUGIN.names() and k != "enabled"
        }
        project = Path(config.config_file_path or ".").parent.resolve()
        values["cache_dir"] = str(resolve_cache_dir(self.config.cache_dir, project))
        if values["cache_dir"] != getattr(self, "_cache_said", None):  # once per serve
            log.info(f"embedding cache in {values['cache_dir']}")
            self._cache_said = values["cache_dir"]
        docs = Path(config.docs_dir).resolve()
        self.docs_prefix = docs.relative_to(project) if docs.is_relative_to(project) else docs
        values["site_name"] = config.site_name
        values["site_url"] = config.site_url or ""
        language = str(config.theme.get("language") or "")
        try:
            self.options, self.widget_options = build_options(values, WHERE)
            self.widget = (
                widget_config(self.widget_options, self.options.actions, language, WHERE)
                if self.widget_options.widget
                else None
            )
        except OptionsError as exc:
            raise PluginError(str(exc)) from None
        self.offline = self.widget is not None and offline_plugin_on(config)
        return config

    def on_pre_build(self, *, config: MkDocsConfig) -> None:
        self.pages = []
        self.language = language_build(config) if self.config.enabled else None
        if self.language is not None and self.widget is not None and self.options is not None:
            # Each language is built in turn; the widget speaks the one being built.
            theme_language = str(config.theme.get("language") or self.language[1])
            self.widget = widget_config(
                self.widget_options, self.options.actions, theme_language, WHERE
            )

    def _folder(self) -> str:
        return self.language[0] if self.language else ""

    def on_files(self, files: Files, *, config: MkDocsConfig) -> Files:
        self.site_pages = [(f.src_uri, f.dest_uri) for f in files.documentation_pages()]
        self.widget_in_files = self._add_widget_files(files, config)
        return files

    def _add_widget_files(self, files: Files, config: MkDocsConfig) -> bool:
        """The widget's files as generated files of the build, so the plugins after this
        one (minify, privacy, offline, hooks) see them as any other asset. Not for a
        language's build (its folder is not the site_dir MkDocs writes to), nor where MkDocs
        has no generated files (before 1.6) or the docs hold a file of the same name:
        `on_post_build` copies them then, as `docpilot index` does."""
        if self.widget is None or self.language is not None or not hasattr(File, "generated"):
            return False
        names = widget_files()
        if any(files.get_file_from_path(f"{WIDGET_DIR}/{name}") for name in names):
            return False
        for name, data in names.items():
            files.append(File.generated(config, f"{WIDGET_DIR}/{name}", content=data))
        return True

    def on_nav(self, nav: Navigation, *, config: MkDocsConfig, files: Files) -> Navigation:
        # Text repeated across pages is indexed on the first page in the nav that has it;
        # llms.txt lists the pages under their top-level nav sections.
        self.nav_order = {page.file.src_uri: i for i, page in enumerate(nav.pages)}
        self.nav = nav_outline(nav.items, "")
        return nav

    def on_post_page(self, output: str, *, page: Page, config: MkDocsConfig) -> str | None:
        if not self.config.enabled:
            return output
        excluded = _excluded_by_front_matter(page)
        site_dir = Path(config.site_dir)
        self.pages.append(
            PageSource(
                path=site_dir / page.file.dest_uri,
                # A language's pages form their own site under its folder.
                url=page_url(page.file.dest_uri.removeprefix(self._folder())),
                excluded=excluded,
                src=page.file.src_uri,
                label=self._label(page.file.src_uri),
                nav_index=self.nav_order.get(page.file.src_uri),
            )
        )
        if excluded and "<head>" in output:
            output = output.replace("<head>", f"<head>\n{NOINDEX_META}", 1)
        if self.widget is not None:
            tags = widget_tags(self.widget, script_src(self.pages[-1].url))
            output = inject(output, tags + OFFLINE_NOTE if self.offline else tags)
        return output

    def _label(self, src: str) -> str:
        """A page's source as the owner sees it: "docs/guide.md", relative to mkdocs.yml."""
        return (self.docs_prefix / src).as_posix()

    @staticmethod
    def _all_sources(config: MkDocsConfig) -> list[str]:
        """Every file under docs_dir, relative to it (every language's sources)."""
        docs = Path(config.docs_dir)
        return [p.relative_to(docs).as_posix() for p in docs.rglob("*") if p.is_file()]

    def _load_embedder(self, options: IndexOptions) -> Embedder | None:
        if self._embedder_key != options.embedder:
            self._embedder = load_embedder(options.embedder)
            self._embedder_key = options.embedder
        return self._embedder

    def on_post_build(self, *, config: MkDocsConfig) -> None:
        if not self.config.enabled or self.options is None:
            return
        root = Path(config.site_dir)
        folder = self._folder()
        site = root / folder
        # site_url as the other plugins left it (mike's sets the version's own address in
        # its on_config, which may run after ours), then under a language's folder.
        options = replace(self.options, site_url=config.site_url or "")
        if folder and options.site_url:
            options = replace(options, site_url=published_under(options.site_url, f"/{folder}"))
        try:
            result = index_built_site(
                site,
                options,
                self.widget_options,
                pages=self.pages + pages_left_unbuilt(
                    root, self.site_pages, self.pages, self._label, self.nav_order, folder
                ),
                embedder=self._load_embedder(options),
                tag_pages=False,  # on_post_page tagged each page as MkDocs wrote it
                warn=unnamed(log.warning),
                note=unnamed(log.info),
                log=unnamed(log.info),
                nav=self.nav,
                serve=self.serve,
                # A language's build sees its own pages; `exclude` may name another's.
                also_sources=self._all_sources(config) if self.language else (),
                widget_files_written=self.widget_in_files,
            )
        except (BuildError, EmbedderError, BrowserRuntimeError) as exc:
            # Without Pyodide the widget sends nothing (it cannot check for secrets).
            raise PluginError(f"docpilot: {exc}") from None
        if self.serve and self.widget is not None and not self.widget["endpoint"]:
            # The widget probes its site root's api/ and the origin's /api/.
            for probed in {site, root}:
                write_preview_health(probed)
        where = f"/{folder}: " if folder else ""
        for line in result.summary().splitlines():
            log.info(where + _NAMED.sub("", line, count=1))
        if result.report.units == 0:
            log.warning(empty_index_warning(self.pages, folder, self.options.exclude))
        if self.offline:
            log.warning(OFFLINE_WARNING)
        # Every build lists its bundle in the site root's manifest: a language's build adds
        # its prefix beside the others; a mike build names the version it deploys.
        language = self.language[1] if self.language else str(config.theme.get("language") or "")
        entry = bundle_entry(root, result.report.path, language, docs_version())
        record_bundle(root, entry)
        if self.language is not None:
            # The root llms.txt links them all (absolute under the root's site_url).
            link_other_bundles(root, read_manifest(root), self.options.site_url)

