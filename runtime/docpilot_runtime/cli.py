"""The `docpilot` command: every verb is a thin wrapper over a function tests also call."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TextIO

from docpilot_runtime import __version__
from docpilot_runtime.api import ask, create_app, index_built_site, load_runtime
from docpilot_runtime.browser.install import BrowserRuntimeError, fetch_browser_runtime
from docpilot_runtime.bundle.schema import BundleError
from docpilot_runtime.embedders import EmbedderError
from docpilot_runtime.evaluate.questions import EvalError
from docpilot_runtime.index.build import BuildError
from docpilot_runtime.index.manifest import refresh_bundle
from docpilot_runtime.records import RecordsError
from docpilot_runtime.serve.metrics import MULTIPROC_ENV
from docpilot_runtime.serve.root_path import RootPathError, normalise_root_path
from docpilot_runtime.settings.keys import OptionsError
from docpilot_runtime.settings.load import CONFIG_ENV, Settings, SettingsError, load_settings
from docpilot_runtime.shared.types import RequestError, Result, parse_ask_request
from docpilot_runtime.turn import Runtime

log = logging.getLogger("docpilot")


def _settings(args: argparse.Namespace) -> Settings:
    return load_settings(args.config)


def cmd_index(args: argparse.Namespace) -> int:
    settings = _settings(args)
    result = index_built_site(args.site_dir, settings.index, settings.widget)
    refresh_bundle(Path(args.site_dir).resolve(), result.report.path.resolve())
    print(result.summary())
    return 0


def serve(
    site_dir: str | Path,
    settings: Settings,
    host: str = "127.0.0.1",
    port: int = 8000,
    workers: int = 1,
    root_path: str = "",
) -> None:
    """Serve the built site and the API until interrupted, under ``root_path`` when given
    (a site published at ``/docs/`` behind a proxy). The runtime loads before uvicorn
    binds, so a bad bundle, settings file or prefix fails here, before any request. With
    ``workers`` > 1, that many processes share the port, one set of caps and one set of
    metrics (prometheus_client's multiprocess mode, in a fresh folder for this start that
    is removed when it stops)."""
    # Imported here so `docpilot index` and `ask` do not pay for the web stack.
    import uvicorn

    from docpilot_runtime.serve.connections import ConnectionLimits
    from docpilot_runtime.serve.front_door import DoorServer
    from docpilot_runtime.serve.server import freeze_loaded, guard_logs, uvicorn_config

    prefix = normalise_root_path(root_path)
    # Fails here, naming the file or the prefix, before any worker starts.
    app = create_app(site_dir, settings, prefix)
    if workers > 1:
        from docpilot_runtime.serve.asgi import ROOT_PATH_ENV, SHARED_CAPS_ENV, SITE_ENV

        os.environ[SITE_ENV] = str(Path(site_dir).resolve())
        os.environ[SHARED_CAPS_ENV] = "1"
        os.environ[ROOT_PATH_ENV] = prefix
        if settings.source:
            os.environ[CONFIG_ENV] = str(Path(settings.source).resolve())
        del app
        options = uvicorn_config(None, settings, host, port).__dict__
        keep = ("proxy_headers", "http", "h11_max_incomplete_event_size",
                "timeout_keep_alive", "server_header", "log_level")
        # Set before the workers start (they import prometheus_client fresh); a folder of
        # its own, so no earlier run's counts add in. Under an owner's
        # PROMETHEUS_MULTIPROC_DIR when one is set, else under the temp folder.
        metrics_dir = tempfile.mkdtemp(
            prefix="docpilot-metrics-", dir=os.environ.get(MULTIPROC_ENV) or None
        )
        os.environ[MULTIPROC_ENV] = metrics_dir
        try:
            with contextlib.suppress(KeyboardInterrupt):
                uvicorn.run(
                    "docpilot_runtime.serve.asgi:app_from_env", host=host, port=port, factory=True,
                    workers=workers, **{key: options[key] for key in keep},
                )
        finally:
            shutil.rmtree(metrics_dir, ignore_errors=True)
        return
    config = uvicorn_config(app, settings, host, port)
    guard_logs()
    freeze_loaded()
    # A front door thread accepts, so health and metrics answer however busy the loop is.
    server = DoorServer(config, ConnectionLimits.of(settings.caps), prefix)
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how it is meant to stop
        server.run()


def cmd_serve(args: argparse.Namespace) -> int:
    serve(
        args.site_dir, _settings(args), host=args.host, port=args.port,
        workers=args.workers, root_path=args.root_path,
    )
    return 0


def format_result(result: Result) -> str:
    """A result for the terminal: the markdown, its citations as ``[n] title — url``,
    the closest pages when the markdown does not list them already (a refusal's does), and
    a last line with kind, confidence and retriever."""
    lines = [result.markdown.rstrip()]
    if result.citations:
        lines.append("")
        lines.extend(f"[{c.n}] {c.title} — {c.url}" for c in result.citations)
    # A refusal's Markdown already lists the closest pages as links: not twice.
    if result.closest and not all(f"]({p.url})" in result.markdown for p in result.closest):
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
    runtime = load_runtime(args.site_dir, _settings(args))
    if args.question is None:
        return ask_lines(runtime, sys.stdin, sys.stdout)
    result = ask(runtime, args.question, page=args.page)
    print(result_line(result.to_dict()) if args.json else format_result(result))
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from docpilot_runtime.evaluate.questions import EvalMode
    from docpilot_runtime.evaluate.run import evaluate_modes, format_run

    modes: tuple[EvalMode, ...] = ("bundle", "lexical") if args.mode == "both" else (args.mode,)
    run = evaluate_modes(
        args.site_dir,
        args.questions,
        modes,
        with_context=args.with_context,
        settings=_settings(args),
        models=args.model,
    )
    if args.html:
        from docpilot_runtime.report.evaluation_page import write_evaluation_page

        write_evaluation_page(run, args.html)
    if args.json:
        print(json.dumps(run.to_dict(), ensure_ascii=False, indent=2))
    else:
        print(format_run(run))
    return 0


def _records(args: argparse.Namespace) -> Any:
    """The records database named by the settings, else the served site's (``--site``, or
    the one site with records) in the user's data folder; spool drained first."""
    from docpilot_runtime.records.export import open_records
    from docpilot_runtime.records.location import default_records

    settings = _settings(args)
    base = Path(settings.source).parent if settings.source else None
    records = settings.records
    if not records.path:
        records = default_records(records, args.site)
    return open_records(records, base, settings.webhooks)


def cmd_records_export(args: argparse.Namespace) -> int:
    import time

    from docpilot_runtime.records.export import export_jsonl, since_days_ms

    store = _records(args)
    try:
        export_jsonl(store, sys.stdout, since_days_ms(args.since, int(time.time() * 1000)))
    finally:
        store.close()
    return 0


def cmd_records_delete(args: argparse.Namespace) -> int:
    store = _records(args)
    try:
        deleted = store.delete(args.turn_ids)
    finally:
        store.close()
    print(f"DocPilot: {deleted} of {len(args.turn_ids)} turn(s) deleted")
    return 0 if deleted == len(args.turn_ids) else 1


def cmd_report(args: argparse.Namespace) -> int:
    from docpilot_runtime.report import write_report

    store = _records(args)
    try:
        written = write_report(store, args.out, since_days=args.since)
    finally:
        store.close()
    print(
        f"DocPilot: report of {written.data.turns} turn(s), "
        f"{len(written.data.unanswered)} unanswered, written to {written.html} and "
        f"{written.markdown}"
    )
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    from docpilot_runtime.serve.mcp import HINT, mcp_installed, run_stdio

    if not mcp_installed():
        print(f"docpilot: error: `docpilot mcp` needs the mcp extra: {HINT}", file=sys.stderr)
        return 2
    if args.max_calls < 1:
        print("docpilot: error: --max-calls must be at least 1", file=sys.stderr)
        return 2
    run_stdio(args.site_dir, _settings(args), args.max_calls)
    return 0


def cmd_fetch_browser_runtime(args: argparse.Namespace) -> int:
    fetch_browser_runtime(args.dest, log=print)
    return 0


def _days(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 36_500:
        raise argparse.ArgumentTypeError(f"must be a whole number of days from 1, got {text!r}")
    return int(text)


def _site_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--site",
        metavar="SITE_DIR",
        help="the site folder `docpilot serve` served, whose records (in the user's data "
        "folder) to read when [records] path is unset; optional when one site has records",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="docpilot", description="Grounded, cited answers for a documentation site."
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log more detail")
    parser.add_argument("--version", action="version", version=f"docpilot {__version__}")
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
    serve.add_argument(
        "--workers", type=int, default=1,
        help="worker processes (default 1); several share the caps through the records "
        "database, and /metrics reports them all",
    )
    serve.add_argument(
        "--root-path",
        default="",
        help="URL path the site is published under behind a proxy, e.g. /docs (default: none)",
    )
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

    evaluation = verbs.add_parser(
        "eval", help="how well the bundle answers and refuses a question set (per kind)"
    )
    evaluation.add_argument("site_dir", help="the built site, with its docpilot/ bundle")
    evaluation.add_argument("questions", help="question set, JSON lines (see the CLI reference)")
    evaluation.add_argument("--json", action="store_true", help="print the report as JSON")
    evaluation.add_argument(
        "--mode",
        choices=["both", "bundle", "lexical"],
        default="both",
        help="bundle: the bundle's own mode (hybrid with an embedder); lexical: no dense "
        "channel; both (default): one after the other",
    )
    evaluation.add_argument(
        "--html", metavar="PATH", help="also write the report for people as one HTML page"
    )
    evaluation.add_argument(
        "--with-context", action="store_true", help="send each question's pasted 'context'"
    )
    evaluation.add_argument(
        "--config", help="runtime settings file (TOML); its providers answer only with --model"
    )
    evaluation.add_argument(
        "--model",
        action="store_true",
        help="the configured providers answer (bundle mode): adds cited answers, refusals "
        "after the model, waits and tokens per kind",
    )
    evaluation.set_defaults(run=cmd_eval)

    records = verbs.add_parser("records", help="the turn records: export or delete")
    records_verbs = records.add_subparsers(dest="records_verb", required=True)
    export = records_verbs.add_parser("export", help="every turn as JSON lines on stdout")
    export.add_argument("--format", choices=["jsonl"], default="jsonl", help="only jsonl")
    export.add_argument("--since", type=_days, help="only the last DAYS days")
    export.add_argument("--config", help="runtime settings file (TOML); its [records] applies")
    _site_option(export)
    export.set_defaults(run=cmd_records_export)
    delete = records_verbs.add_parser("delete", help="delete turns (and feedback) by turn id")
    delete.add_argument("turn_ids", nargs="+", metavar="TURN_ID")
    delete.add_argument("--config", help="runtime settings file (TOML); its [records] applies")
    _site_option(delete)
    delete.set_defaults(run=cmd_records_delete)

    report = verbs.add_parser("report", help="the owner's report (HTML and Markdown)")
    report.add_argument("--since", type=_days, default=30, help="the last DAYS days (30)")
    report.add_argument("--out", default="docpilot-report", help="output folder")
    report.add_argument("--config", help="runtime settings file (TOML); its [records] applies")
    _site_option(report)
    report.set_defaults(run=cmd_report)


    mcp = verbs.add_parser("mcp", help="serve the site's tools to coding agents over MCP (stdio)")
    mcp.add_argument("site_dir", help="the built site, with its docpilot/ bundle")
    mcp.add_argument("--config", help="runtime settings file (TOML); providers enable `ask`")
    mcp.add_argument(
        "--max-calls", type=int, default=120, help="tool calls allowed per minute (default 120)"
    )
    mcp.set_defaults(run=cmd_mcp)

    fetch_help = "download the pinned Pyodide core from the npm registry (no npm needed)"
    fetch = verbs.add_parser("fetch-browser-runtime", help=fetch_help, description=fetch_help)
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
        EmbedderError,
        OptionsError,
        RecordsError,
        EvalError,
        RootPathError,
    ) as exc:
        print(f"docpilot: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
