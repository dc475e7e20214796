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

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import docpilot_runtime
from docpilot_runtime.embedders import Embedder, EmbedderError, load_embedder
from docpilot_runtime.index.build import BuildError, PageSource, index_site, page_url
from docpilot_runtime.index.options import IndexOptions, OptionsError, index_options
from docpilot_runtime.static_assets import BrowserRuntimeError, install_browser_runtime
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin
from mkdocs.structure.pages import Page
from mkdocs.utils import get_relative_url

from .config import DocPilotConfig

log = logging.getLogger("mkdocs.plugins.docpilot")
NOINDEX_META = '<meta name="docpilot" content="noindex">'
WHERE = "mkdocs.yml plugins.docpilot"
WIDGET_DIR = "docpilot"  # under site_dir, next to the bundle
WIDGET_SCRIPT = "docpilot.js"


def widget_source() -> Path:
    """The folder holding the widget's files: inside the installed package (a wheel ships
    them as `docpilot_runtime/widget/`), else the source tree's `widget/` (editable install)."""
    package = Path(docpilot_runtime.__file__).resolve().parent
    for folder in (package / "widget", package.parent.parent / "widget"):
        if (folder / WIDGET_SCRIPT).is_file():
            return folder
    raise PluginError(
        f"DocPilot: the widget files are missing (looked for {WIDGET_SCRIPT} "
        f"in {package / 'widget'} and {package.parent.parent / 'widget'})"
    )


def widget_strings(language: str, overrides: dict[str, str]) -> dict[str, str]:
    """The widget's interface strings: English, then the shipped language that matches
    ``language`` ("pt-BR" tries pt-br, then pt), then the owner's overrides."""
    i18n = widget_source() / "i18n"
    strings: dict[str, str] = json.loads((i18n / "en.json").read_text(encoding="utf-8"))
    unknown = set(overrides) - set(strings)
    if unknown:
        raise PluginError(
            f"{WHERE}: unknown key(s) {sorted(unknown)} under 'strings' (known: {sorted(strings)})"
        )
    code = language.lower().replace("_", "-")
    for candidate in (code, code.split("-")[0]):
        shipped = i18n / f"{candidate}.json"
        if candidate and shipped.is_file():
            strings.update(json.loads(shipped.read_text(encoding="utf-8")))
            break
    return {**strings, **overrides}


def _check_url(key: str, value: str, allowed: tuple[str, ...]) -> None:
    if value and not value.lower().startswith(allowed):
        raise PluginError(f"{WHERE}: '{key}' must start with {' or '.join(allowed)}, got {value!r}")


def widget_config(plugin: DocPilotConfig, theme_language: str) -> dict[str, Any]:
    """What the widget is told on every page (public: it is written into the HTML)."""
    endpoint = plugin.endpoint.strip()
    if endpoint != "browser":
        _check_url("endpoint", endpoint, ("http://", "https://"))
    _check_url("support_url", plugin.support_url, ("http://", "https://", "mailto:", "/"))
    _check_url("pyodide_url", plugin.pyodide_url, ("http://", "https://", "/"))
    language = plugin.language or theme_language or "en"
    # Declared actions with a URL: the widget opens it; the others become DOM events.
    action_urls = {
        str(a["name"]): str(a["url"]) for a in plugin.actions if a.get("name") and a.get("url")
    }
    return {
        "endpoint": endpoint,
        "title": plugin.title,
        "placeholder": plugin.placeholder,
        "position": plugin.position,
        "suggested_questions": list(plugin.suggested_questions),
        "support_url": plugin.support_url,
        "history": plugin.history,
        "language": language,
        "strings": widget_strings(language, dict(plugin.strings)),
        "pyodide_url": plugin.pyodide_url,
        "actions": action_urls,
    }


def widget_tags(config: dict[str, Any], script_src: str) -> str:
    """The two tags that start the widget. The JSON is escaped so that no value can close
    the script element (`</script>`) or open a comment."""
    data = json.dumps(config, ensure_ascii=False, separators=(",", ":"))
    data = data.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return (
        f'<script id="docpilot-config" type="application/json">{data}</script>\n'
        f'<script type="module" src="{script_src}"></script>\n'
    )


def copy_widget(site_dir: Path) -> None:
    """Copy the widget's files (script, stylesheet, worker) into `site/docpilot/`."""
    target = site_dir / WIDGET_DIR
    target.mkdir(parents=True, exist_ok=True)
    for path in sorted(widget_source().iterdir()):
        if path.is_file() and not path.name.startswith((".", "_")):
            shutil.copyfile(path, target / path.name)


def install_browser_files(site_dir: Path, pyodide_url: str, static_mode: bool) -> None:
    """Pyodide and our browser wheel, which the widget's worker needs for the in-browser
    credential check (in every mode) and, with ``endpoint: browser``, the static index."""
    try:
        install_browser_runtime(
            site_dir, pyodide_url or None, log=log.info, static_mode=static_mode
        )
    except BrowserRuntimeError as exc:
        # Without it the widget sends nothing (it cannot check questions for secrets).
        raise PluginError(f"DocPilot: {exc}") from None


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
        self._embedder: Embedder | None = None
        self._embedder_key: object = None

    def on_startup(self, *, command: str, dirty: bool) -> None:
        # Defining on_startup keeps this object alive across `mkdocs serve` rebuilds,
        # so the embedding model is loaded once.
        pass

    def on_config(self, config: MkDocsConfig) -> MkDocsConfig | None:
        if not self.config.enabled:
            return config
        values: dict[str, Any] = {
            "embedder": self.config.embedder,
            "max_section_chars": self.config.max_section_chars,
            "exclude": self.config.exclude,
            "cache_dir": str(Path(config.config_file_path or ".").parent / self.config.cache_dir),
            "site_name": config.site_name,
            "site_url": config.site_url or "",
            "tools": self.config.tools,
            "actions": self.config.actions,
        }
        try:
            self.options = index_options(values, "mkdocs.yml plugins.docpilot")
        except OptionsError as exc:
            raise PluginError(str(exc)) from None
        language = str(config.theme.get("language") or "")
        self.widget = widget_config(self.config, language) if self.config.widget else None
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
            src = get_relative_url(f"{WIDGET_DIR}/{WIDGET_SCRIPT}", page.url)
            tags = widget_tags(self.widget, src)
            end = output.rfind("</body>")
            output = output + tags if end < 0 else output[:end] + tags + output[end:]
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
            copy_widget(Path(config.site_dir))
            install_browser_files(
                Path(config.site_dir),
                self.config.pyodide_url,
                static_mode=self.widget["endpoint"] == "browser",
            )
