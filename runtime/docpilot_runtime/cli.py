"""The `docpilot` command: every verb is a thin wrapper over a function tests also call."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from .index.build import BuildError, index_site
from .settings import Settings, SettingsError, load_settings

log = logging.getLogger("docpilot")


def _settings(args: argparse.Namespace) -> Settings:
    return load_settings(args.config)


def cmd_index(args: argparse.Namespace) -> int:
    settings = _settings(args)
    options = settings.index
    if not options.site_name:
        options = replace(options, site_name=Path(args.site_dir).resolve().name)
    report = index_site(args.site_dir, options)
    print(report.summary())
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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return int(args.run(args))
    except (BuildError, SettingsError) as exc:
        print(f"docpilot: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
