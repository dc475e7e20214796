"""What one edited page costs under `mkdocs serve`: the plugin's share of a rebuild.

`mkdocs serve` keeps the plugin object across rebuilds (it defines ``on_startup``) and
calls MkDocs' ``build`` again after each edit. This script does the same in one process:
load the config the way ``serve`` does (a temporary site dir, ``serve_url`` set), build
once to warm up (model loaded, embedding cache filled), then edit one page (a sentence
appended to its first paragraph, a different sentence each time) and rebuild. Each
rebuild is timed whole, and the plugin's hooks (``on_post_page`` for every page, and
``on_post_build``, which indexes the site and writes the bundle) are timed apart. The
same edits are then rebuilt with the plugin disabled (``enabled: false``), so "added"
is the whole-rebuild difference too.

Site: the Material for MkDocs corpus with ``tests/corpora.py``'s reduced config
(``--smoke``: example-site, two edits). Both ``serve`` (full rebuilds) and
``serve --dirty`` (only the edited page rebuilt) are measured. Goal: one edited page adds
<= 0.5 s to the rebuild (median of the plugin's hook time).

Run: ``.venv/bin/python benchmarks/bench_rebuild.py [--edits 5] [--smoke]``.
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from mkdocs.commands.build import build
from mkdocs.config import load_config

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(HERE))
from common import tree_state  # noqa: E402
from corpora import EXAMPLE_SITE, MATERIAL, reduced_config  # noqa: E402

from mkdocs_docpilot.plugin import DocPilotPlugin  # noqa: E402

SERVE_URL = "http://127.0.0.1:8000/"


class HookClock:
    """Seconds spent in the plugin's page and build hooks since the last reset."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.cpu = 0.0  # this process's CPU time: less swayed by other jobs on the cores

    @contextmanager
    def wrapped(self) -> Iterator[None]:
        originals = {name: getattr(DocPilotPlugin, name) for name in ("on_post_page", "on_post_build")}

        def timed(original: Callable[..., Any]) -> Callable[..., Any]:
            def call(*args: Any, **kwargs: Any) -> Any:
                started, cpu = time.perf_counter(), time.process_time()
                try:
                    return original(*args, **kwargs)
                finally:
                    self.seconds += time.perf_counter() - started
                    self.cpu += time.process_time() - cpu

            return call

        for name, original in originals.items():
            setattr(DocPilotPlugin, name, timed(original))
        try:
            yield
        finally:
            for name, original in originals.items():
                setattr(DocPilotPlugin, name, original)


def _project(smoke: bool, work: Path, enabled: bool) -> tuple[Path, Path]:
    """A copy of the docs (so edits never touch the corpus) and its mkdocs.yml."""
    plugin = {"cache_dir": str(work / "cache"), "enabled": enabled}
    if smoke:
        original = yaml.safe_load((EXAMPLE_SITE / "mkdocs.yml").read_text(encoding="utf-8"))
        docs = work / "docs"
        shutil.copytree(EXAMPLE_SITE / "docs", docs)
        original["docs_dir"] = str(docs)
        original["plugins"] = [
            p if p != "docpilot" and not (isinstance(p, dict) and "docpilot" in p)
            else {"docpilot": plugin}
            for p in original.get("plugins", [])
        ]
        config = work / "mkdocs.yml"
        config.write_text(yaml.safe_dump(original, sort_keys=False), encoding="utf-8")
        return config, docs
    docs = work / "docs"
    shutil.copytree(MATERIAL / "docs", docs)
    corpus = work / "corpus"
    corpus.mkdir()
    (corpus / "docs").symlink_to(docs)
    shutil.copy(MATERIAL / "mkdocs.yml", corpus / "mkdocs.yml")
    return reduced_config(corpus, work, plugin), docs


def _edit(page: Path, n: int) -> None:
    text = page.read_text(encoding="utf-8")
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line and line[0].isalpha():
            lines[i] = line + f" Edit number {n} changes this sentence."
            break
    page.write_text("\n".join(lines) + "\n", encoding="utf-8")


def measure(
    smoke: bool, edits: int, enabled: bool, dirty: bool
) -> tuple[list[float], list[float], list[float]]:
    """Whole-rebuild seconds, hook seconds and hook CPU seconds for each edit."""
    with tempfile.TemporaryDirectory(prefix="bench-rebuild-") as tmp:
        work = Path(tmp)
        config_file, docs = _project(smoke, work, enabled)
        site_dir = work / "serve-site"

        def get_config() -> Any:
            config = load_config(config_file=str(config_file), site_dir=str(site_dir))
            config.site_url = SERVE_URL
            return config

        first = get_config()
        first.plugins.on_startup(command="serve", dirty=dirty)
        build(first, serve_url=SERVE_URL, dirty=dirty)
        page = docs / ("getting-started/quick-start.md" if smoke else "setup/changing-the-colors.md")
        clock = HookClock()
        totals, hooks, cpus = [], [], []
        with clock.wrapped():
            for n in range(edits):
                _edit(page, n)
                os.utime(page)  # a newer mtime than its built page, for --dirty
                clock.seconds = clock.cpu = 0.0
                started = time.perf_counter()
                build(get_config(), serve_url=SERVE_URL, dirty=dirty)
                totals.append(time.perf_counter() - started)
                hooks.append(clock.seconds)
                cpus.append(clock.cpu)
        first.plugins.on_shutdown()
    return totals, hooks, cpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--edits", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="example-site, two edits")
    args = parser.parse_args()
    edits = 2 if args.smoke else args.edits
    logging.getLogger("mkdocs").setLevel(logging.ERROR)
    site = "example-site" if args.smoke else "Material corpus (reduced config)"
    print(f"tree {tree_state()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"Python {platform.python_version()}, load {os.getloadavg()[0]:.2f}, {site}, "
          f"{edits} edits each\n")
    print("| mode | rebuild, plugin on (median s) | rebuild, plugin off (median s) | "
          "added (s) | plugin hooks (median s) | hooks CPU (median s) | goal <= 0.5 s |")
    print("|---|---|---|---|---|---|---|")
    for dirty in (False, True):
        on_total, on_hooks, on_cpu = measure(args.smoke, edits, True, dirty)
        off_total, _, _ = measure(args.smoke, edits, False, dirty)
        on, off, hook, cpu = (
            statistics.median(x) for x in (on_total, off_total, on_hooks, on_cpu)
        )
        verdict = "yes" if hook <= 0.5 else "no"
        mode = "serve --dirty" if dirty else "serve"
        print(f"| {mode} | {on:.2f} | {off:.2f} | {on - off:+.2f} | {hook:.2f} | {cpu:.2f} "
              f"| {verdict} |")


if __name__ == "__main__":
    main()
