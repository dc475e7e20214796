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

from docpilot_runtime.api import index_built_site
from docpilot_runtime.embedders import Embedder, EmbedderError, load_embedder
from docpilot_runtime.index.build import BuildError, PageSource, page_url
from docpilot_runtime.index.options import IndexOptions
from docpilot_runtime.schema import OptionsError
from docpilot_runtime.settings import build_options
from docpilot_runtime.settings_schema import PLUGIN
from docpilot_runtime.static_assets import BrowserRuntimeError
from docpilot_runtime.widget import inject, script_src, widget_config, widget_tags
from docpilot_runtime.widget_options import WidgetOptions
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

    def on_config(self, config: MkDocsConfig) -> MkDocsConfig | None:
        if not self.config.enabled:
            return config
        # Unknown options stay MkDocs' warning (an error under --strict), as documented.
        values: dict[str, Any] = {
            k: v for k, v in self.config.items() if k in PLUGIN.names() and k != "enabled"
        }
        values["cache_dir"] = str(
            Path(config.config_file_path or ".").parent / self.config.cache_dir
        )
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
        try:
            result = index_built_site(
                config.site_dir,
                self.options,
                self.widget_options,
                pages=self.pages,
                embedder=self._load_embedder(self.options),
                tag_pages=False,  # on_post_page tagged each page as MkDocs wrote it
                warn=log.warning,
                log=log.info,
            )
        except (BuildError, EmbedderError, BrowserRuntimeError) as exc:
            # Without Pyodide the widget sends nothing (it cannot check for secrets).
            raise PluginError(f"DocPilot: {exc}") from None
        log.info(result.summary())
