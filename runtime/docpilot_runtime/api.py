"""The public Python API: index a built site, load its runtime, create the app, ask.

Every `docpilot` verb and the MkDocs plugin are thin wrappers over these functions (as
sqlite-utils' CLI mirrors its Python API), so a site indexed from Python, from the CLI or
by `mkdocs build` goes through the same code. Re-exported from `docpilot_runtime`.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from docpilot_runtime.browser.widget import inject_built_site, install_widget, widget_config
from docpilot_runtime.index.build import BuildReport, PageSource, collect_pages, index_site
from docpilot_runtime.index.cache import default_cache_dir
from docpilot_runtime.index.llms_txt import NavEntry
from docpilot_runtime.settings.index import DEFAULT_CACHE_DIR, IndexOptions
from docpilot_runtime.settings.load import Settings
from docpilot_runtime.settings.widget import WidgetOptions
from docpilot_runtime.shared.types import Result, parse_ask_request

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from docpilot_runtime.embedders import Embedder
    from docpilot_runtime.evaluate.figures import Report
    from docpilot_runtime.evaluate.questions import EvalMode
    from docpilot_runtime.turn import Runtime

_LANG = re.compile(rb"<html[^>]*\blang=[\"']([^\"']+)[\"']", re.I)
Log = Callable[[str], None]


@dataclass(frozen=True)
class IndexResult:
    """What indexing a site did: the build's report and, when the widget is on, how many
    pages got its tags (None when the caller tagged them, as the plugin does)."""

    report: BuildReport
    widget: bool
    tagged: int | None = None
    page_count: int = 0

    def summary(self) -> str:
        lines = [self.report.summary()]
        if self.widget and self.tagged is not None:
            lines.append(f"DocPilot: widget added to {self.tagged} of {self.page_count} pages")
        return "\n".join(lines)


def page_language(pages: Sequence[PageSource]) -> str:
    """The `lang` attribute of the first page, "" when there is none."""
    if not pages:
        return ""
    with pages[0].path.open("rb") as head:
        found = _LANG.search(head.read(4096))
    return found.group(1).decode("ascii", "replace") if found else ""


def index_built_site(
    site_dir: str | os.PathLike[str],
    options: IndexOptions | None = None,
    widget: WidgetOptions | None = None,
    *,
    pages: Sequence[PageSource] | None = None,
    embedder: Embedder | None = None,
    tag_pages: bool = True,
    warn: Log | None = None,
    note: Log | None = None,
    log: Log = lambda _message: None,
    nav: Sequence[NavEntry] = (),
    serve: bool = False,
    also_sources: Sequence[str] = (),
    widget_files_written: bool = False,
) -> IndexResult:
    """Write the bundle for an already built site and install the reader's widget.

    ``pages`` defaults to every HTML file under ``site_dir``; they are indexed in URL
    order whoever lists them (``nav``, the site's navigation as (url, title) pairs, orders
    ``llms.txt``). With ``tag_pages`` the
    widget's tags are added to every page here; the plugin passes False because it adds
    them while MkDocs writes each page. ``serve``: a `mkdocs serve` rebuild, which reuses
    this process's last gate calibration (``index_site``) and writes no .gz/.br siblings
    of the widget's text files (``install_browser_runtime``). ``also_sources``: the
    sources of the project's other builds (``index_site``). Raises BuildError,
    EmbedderError or BrowserRuntimeError naming what is wrong.
    """
    site = Path(site_dir)
    options = options or IndexOptions()
    if options.cache_dir == DEFAULT_CACHE_DIR:  # outside the project, keyed by it
        options = replace(options, cache_dir=str(default_cache_dir(Path.cwd())))
        log(f"docpilot: embedding cache in {options.cache_dir}")
    widget = widget or WidgetOptions()
    # One order for every caller, so the plugin and `docpilot index` write the same bytes.
    all_pages = sorted(collect_pages(site) if pages is None else pages, key=lambda p: p.url)
    report = index_site(
        site, options, pages=all_pages, embedder=embedder, warn=warn, note=note, nav=nav,
        serve=serve, also_sources=also_sources,
    )
    if not widget.widget:
        return IndexResult(report, widget=False)
    tagged = None
    if tag_pages:
        config = widget_config(widget, options.actions, page_language(all_pages), "[index]")
        tagged = inject_built_site(site, [(p.path, p.url) for p in all_pages], config)
    # `mkdocs serve`'s server ignores .gz/.br siblings: compressing static.json again after
    # every edit would only cost time.
    # The plugin hands the widget's own files to MkDocs' collection (widget_files_written).
    install_widget(site, widget, log=log, bundle=report.bundle, warn=warn, precompress=not serve,
                   copy=not widget_files_written)
    return IndexResult(report, widget=True, tagged=tagged, page_count=len(all_pages))


def load_runtime(
    site_dir: str | os.PathLike[str], settings: Settings | None = None
) -> Runtime:
    """Load every bundle under ``site_dir`` once; raises BundleError naming the file."""
    from docpilot_runtime.turn import load_runtime as load

    return load(Path(site_dir), settings)


def create_app(
    site_dir: str | os.PathLike[str], settings: Settings | None = None, root_path: str = ""
) -> Starlette:
    """The Starlette app serving the built site and the API (runtime loaded here), under
    ``root_path`` when given (``/docs``: see `root_path`)."""
    from docpilot_runtime.serve.app import create_app as create

    return create(site_dir, settings, root_path)


def ask(
    site: Runtime | str | os.PathLike[str],
    question: str,
    *,
    page: str | None = None,
    history: Sequence[Mapping[str, Any]] = (),
    settings: Settings | None = None,
) -> Result:
    """One turn outside any server: ``site`` is a loaded Runtime or a built site's folder
    (loaded with ``settings``). The request is checked as the HTTP API checks it, so a
    question over the limit raises RequestError naming the field."""
    from docpilot_runtime.turn import Runtime

    runtime = site if isinstance(site, Runtime) else load_runtime(site, settings)
    body: dict[str, Any] = {"question": question}
    if page:
        body["page"] = page
    if history:
        body["history"] = [dict(item) for item in history]
    request = parse_ask_request(body, runtime.settings.limits)
    return asyncio.run(runtime.ask(request))


def evaluate_site(
    site_dir: str | os.PathLike[str],
    questions: str | os.PathLike[str],
    *,
    mode: EvalMode = "bundle",
    with_context: bool = False,
    settings: Settings | None = None,
    models: bool = False,
) -> Report:
    """Every question of a JSON-lines set asked as one turn of the built site, summarised
    per kind (`docpilot eval`): with no model, or with the settings' providers answering
    (``models``, bundle mode). ``mode="lexical"`` evaluates the same bundle without its
    dense channel. Raises EvalError naming file, line and field."""
    from docpilot_runtime.evaluate.questions import load_questions
    from docpilot_runtime.evaluate.run import evaluate, evaluation_runtime

    asked = load_questions(Path(questions))
    runtime = evaluation_runtime(Path(site_dir), mode, settings, models)
    return evaluate(runtime, asked, with_context, mode)
