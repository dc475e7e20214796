"""The `docpilot` command: every verb is a thin wrapper over a function tests also call."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

from .bundle import BundleError
from .index.build import BuildError, collect_pages, index_site
from .index.cache import default_cache_dir
from .index.options import DEFAULT_CACHE_DIR, IndexOptions, OptionsError
from .settings import Settings, SettingsError, load_settings
from .static_assets import BrowserRuntimeError, fetch_browser_runtime
from .turn import Runtime, load_runtime
from .types import AskRequest, RequestError, Result, parse_ask_request
from .widget import WidgetOptions, inject_built_site, install_widget, widget_config

_LANG = re.compile(r"<html[^>]*\blang=\"([^\"]+)\"", re.I)

log = logging.getLogger("docpilot")


def _settings(args: argparse.Namespace) -> Settings:
    return load_settings(args.config)


def cmd_index(args: argparse.Namespace) -> int:
    settings = _settings(args)
    options = settings.index
    if not options.site_name:
        options = replace(options, site_name=Path(args.site_dir).resolve().name)
    if options.cache_dir == DEFAULT_CACHE_DIR:  # outside the project, keyed by it
        options = replace(options, cache_dir=str(default_cache_dir(Path.cwd())))
        logging.getLogger("docpilot").info(f"docpilot: embedding cache in {options.cache_dir}")
    report = index_site(args.site_dir, options)
    print(report.summary())
    if settings.widget.widget:
        print(add_widget(Path(args.site_dir), settings.widget, options))
    return 0


def add_widget(site_dir: Path, widget: WidgetOptions, options: IndexOptions) -> str:
    """Put the reader's widget into every page of an already built site."""
    pages = collect_pages(site_dir)
    first = pages[0].path.read_text(encoding="utf-8", errors="replace") if pages else ""
    language = _LANG.search(first)
    config = widget_config(
        widget, options.actions, language.group(1) if language else "", "[index]"
    )
    changed = inject_built_site(site_dir, [(p.path, p.url) for p in pages], config)
    install_widget(site_dir, widget)
    return f"DocPilot: widget added to {changed} of {len(pages)} pages"


def serve(
    site_dir: str | Path, settings: Settings, host: str = "127.0.0.1", port: int = 8000
) -> None:
    """Serve the built site and the API until interrupted. The runtime loads before
    uvicorn binds, so a bad bundle or settings file fails here, before any request."""
    # Imported here so `docpilot index` and `ask` do not pay for the web stack.
    import uvicorn

    from .app import create_app

    app = create_app(site_dir, settings)
    uvicorn.run(app, host=host, port=port, log_level="info")


def cmd_serve(args: argparse.Namespace) -> int:
    serve(args.site_dir, _settings(args), host=args.host, port=args.port)
    return 0


def ask_one(runtime: Runtime, request: AskRequest) -> Result:
    """One turn, outside any server."""
    return asyncio.run(runtime.ask(request))


def format_result(result: Result) -> str:
    """A result for the terminal: the markdown, its citations as ``[n] title — url``,
    the closest pages on a refusal, and a last line with kind, confidence and retriever."""
    lines = [result.markdown.rstrip()]
    if result.citations:
        lines.append("")
        lines.extend(f"[{c.n}] {c.title} — {c.url}" for c in result.citations)
    if result.closest:
        lines.append("")
        lines.append("Closest pages:")
        lines.extend(f"- {p.title} — {p.url}" for p in result.closest)
    facts = [f"kind {result.kind}"]
    if result.credential_kind:
        facts.append(result.credential_kind)
    if result.confidence is not None:
        facts.append(f"confidence {result.confidence}")
    if result.retriever:
        facts.append(result.retriever)
    if result.rescued:
        facts.append("rescued")
    lines.append("")
    lines.append(f"({' · '.join(facts)})")
    return "\n".join(lines)


def result_line(payload: dict[str, Any]) -> str:
    """One JSON line (the result object, or an ``{"error": ...}``)."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def ask_lines(runtime: Runtime, lines: Iterable[str], out: TextIO) -> int:
    """Batch mode: one JSON request per input line, one JSON result per output line, in
    order. A bad line gets an ``{"error": ...}`` line and the batch goes on; the
    return value is 1 when any line failed, else 0. Blank lines are skipped."""
    failed = False
    limits = runtime.settings.limits
    with asyncio.Runner() as runner:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                request = parse_ask_request(_decode_line(line, number), limits)
                payload = runner.run(runtime.ask(request)).to_dict()
            except RequestError as exc:
                payload, failed = exc.to_dict(), True
            except Exception as exc:
                # Never the exception's message: it may quote the question.
                log.error("line %d: turn failed (%s)", number, type(exc).__name__)
                error = {"field": "body", "message": f"line {number}: the turn failed"}
                payload, failed = {"error": error}, True
            out.write(result_line(payload) + "\n")
            out.flush()
    return 1 if failed else 0


def _decode_line(line: str, number: int) -> Any:
    try:
        return json.loads(line)
    except (json.JSONDecodeError, RecursionError):
        raise RequestError("body", f"line {number} is not valid JSON") from None


def cmd_ask(args: argparse.Namespace) -> int:
    settings = _settings(args)
    runtime = load_runtime(args.site_dir, settings)
    if args.question is None:
        return ask_lines(runtime, sys.stdin, sys.stdout)
    body: dict[str, Any] = {"question": args.question}
    if args.page:
        body["page"] = args.page
    result = ask_one(runtime, parse_ask_request(body, settings.limits))
    print(result_line(result.to_dict()) if args.json else format_result(result))
    return 0


def cmd_fetch_browser_runtime(args: argparse.Namespace) -> int:
    fetch_browser_runtime(args.dest, log=print)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="docpilot", description="Grounded, cited answers for a documentation site."
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log more detail")
    verbs = parser.add_subparsers(dest="verb", required=True)

    index = verbs.add_parser("index", help="write the bundle for an already built site")
    index.add_argument("site_dir", help="the built site, e.g. site/")
    index.add_argument("--config", help="settings file (TOML); its [index] table applies")
    index.set_defaults(run=cmd_index)

    serve = verbs.add_parser("serve", help="serve the built site and the API")
    serve.add_argument("site_dir", help="the built site, with its docpilot/ bundle")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port to bind (default 8000)")
    serve.add_argument("--config", help="runtime settings file (TOML)")
    serve.set_defaults(run=cmd_serve)

    ask = verbs.add_parser("ask", help="one turn in the terminal, or JSON lines on stdin")
    ask.add_argument("site_dir", help="the built site, with its docpilot/ bundle")
    ask.add_argument(
        "question", nargs="?", help="the question; omit it to read JSON lines from stdin"
    )
    ask.add_argument("--json", action="store_true", help="print the result object as JSON")
    ask.add_argument("--page", help="the page the reader is on, e.g. /guide/setup/")
    ask.add_argument("--config", help="runtime settings file (TOML)")
    ask.set_defaults(run=cmd_ask)

    fetch = verbs.add_parser(
        "fetch-browser-runtime",
        help="download the pinned Pyodide core (with npm) for offline builds of the widget",
    )
    fetch.add_argument("--dest", help="where to put it (default: the user's cache directory)")
    fetch.set_defaults(run=cmd_fetch_browser_runtime)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return int(args.run(args))
    except (
        BuildError,
        BundleError,
        SettingsError,
        RequestError,
        BrowserRuntimeError,
        OptionsError,
    ) as exc:
        print(f"docpilot: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
