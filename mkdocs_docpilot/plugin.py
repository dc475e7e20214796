"""The `docpilot` MkDocs plugin: events only; the work is in `docpilot_runtime`.

After the build has written every page, hand the pages (with their URLs and the
front-matter exclusions) to the indexer, which writes `site/docpilot/bundle.msgpack`.
Excluded pages also get `<meta name="docpilot" content="noindex">`, so a later
`docpilot index site/` honours the same exclusion.

The reader's widget: every page gets its configuration (a JSON script block) and a
module script tag before `</body>`, with a relative path so the site works under a
sub-path; the widget's files are copied into `site/docpilot/` after the build.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from docpilot_runtime.embedders import Embedder, EmbedderError, load_embedder
from docpilot_runtime.index.build import BuildError, PageSource, index_site, page_url
from docpilot_runtime.index.cache import default_cache_dir
from docpilot_runtime.index.options import (
    DEFAULT_CACHE_DIR,
    IndexOptions,
    OptionsError,
    index_options,
)
from docpilot_runtime.widget import (
    WIDGET_KEYS,
    WidgetOptions,
    inject,
    install_widget,
    script_src,
    widget_config,
    widget_options,
    widget_tags,
)
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin
from mkdocs.structure.pages import Page

from .config import DocPilotConfig

log = logging.getLogger("mkdocs.plugins.docpilot")
NOINDEX_META = '<meta name="docpilot" content="noindex">'
WHERE = "mkdocs.yml plugins.docpilot"


def _excluded_by_front_matter(page: Page) -> bool:
    value = page.meta.get("docpilot")
    if value is False:
        return True
    return isinstance(value, dict) and bool(value.get("exclude"))


class DocPilotPlugin(BasePlugin[DocPilotConfig]):  # type: ignore[no-untyped-call]
    def __init__(self) -> None:
        self.pages: list[PageSource] = []
        self.options: IndexOptions | None = None
        self.widget: dict[str, Any] | None = None
        self.widget_options = WidgetOptions(widget=False)
        self._embedder: Embedder | None = None
        self._embedder_key: object = None

    def on_startup(self, *, command: str, dirty: bool) -> None:
        # Defining on_startup keeps this object alive across `mkdocs serve` rebuilds,
        # so the embedding model is loaded once.
        pass

    def _cache_dir(self, project: Path) -> Path:
        """The configured cache_dir (relative to mkdocs.yml), else the per-project default
        outside the project (`default_cache_dir`), said once at info level."""
        if self.config.cache_dir != DEFAULT_CACHE_DIR:
            return project / self.config.cache_dir
        where = default_cache_dir(project)
        if getattr(self, "_cache_said", None) != where:
            log.info(f"docpilot: embedding cache in {where} (set cache_dir to move it)")
            self._cache_said = where
        return where

    def on_config(self, config: MkDocsConfig) -> MkDocsConfig | None:
        if not self.config.enabled:
            return config
        values: dict[str, Any] = {
            "embedder": self.config.embedder,
            "max_section_chars": self.config.max_section_chars,
            "exclude": self.config.exclude,
            "cache_dir": str(self._cache_dir(Path(config.config_file_path or ".").parent)),
            "site_name": config.site_name,
            "site_url": config.site_url or "",
            "tools": self.config.tools,
            "actions": self.config.actions,
        }
        widget_values = {key: self.config[key] for key in WIDGET_KEYS}
        language = str(config.theme.get("language") or "")
        try:
            self.options = index_options(values, WHERE)
            self.widget_options = widget_options(widget_values, WHERE)
            self.widget = (
                widget_config(self.widget_options, self.options.actions, language, WHERE)
                if self.widget_options.widget
                else None
            )
        except OptionsError as exc:
            raise PluginError(str(exc)) from None
        return config

    def on_pre_build(self, *, config: MkDocsConfig) -> None:
        self.pages = []

    def on_post_page(self, output: str, *, page: Page, config: MkDocsConfig) -> str | None:
        if not self.config.enabled:
            return output
        excluded = _excluded_by_front_matter(page)
        site_dir = Path(config.site_dir)
        self.pages.append(
            PageSource(
                path=site_dir / page.file.dest_uri,
                url=page_url(page.file.dest_uri),
                excluded=excluded,
                src=page.file.src_uri,
            )
        )
        if excluded and "<head>" in output:
            output = output.replace("<head>", f"<head>\n{NOINDEX_META}", 1)
        if self.widget is not None:
            output = inject(output, widget_tags(self.widget, script_src(self.pages[-1].url)))
        return output

    def _load_embedder(self, options: IndexOptions) -> Embedder | None:
        if self._embedder_key != options.embedder:
            self._embedder = load_embedder(options.embedder)
            self._embedder_key = options.embedder
        return self._embedder

    def on_post_build(self, *, config: MkDocsConfig) -> None:
        if not self.config.enabled or self.options is None:
            return
        pages = sorted(self.pages, key=lambda p: p.url)
        try:
            embedder = self._load_embedder(self.options)
            report = index_site(
                config.site_dir, self.options, pages=pages, embedder=embedder, warn=log.warning
            )
        except (BuildError, EmbedderError) as exc:
            raise PluginError(f"DocPilot: {exc}") from None
        log.info(report.summary())
        if self.widget is not None:
            # Without Pyodide this warns once (so --strict fails) and the widget sends
            # nothing (it cannot check for secrets); the build itself goes on.
            install_widget(
                Path(config.site_dir), self.widget_options, log=log.info, warn=log.warning
            )
