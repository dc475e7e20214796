"""The plugin's cost in `mkdocs build`: CPU and peak memory with DocPilot against without.

One site, the Material for MkDocs corpus (the reduced config of ``tests/corpora.py``),
built by `mkdocs build` in a subprocess three ways, interleaved ``--n`` times so the
shared machine's load falls alike on each:

* the peer: Material's own build, plugins ``search`` only;
* with DocPilot, cold: its default options and an empty cache (a first build, or CI);
* with DocPilot, warm: the same with the cache the cold build left (a rebuild).

Each build's CPU (user + system) and peak resident memory come from the kernel's
accounting of the child (``os.wait4``), so nothing in this process counts. Prints
medians, the differences and ratios to the peer, and the 1-minute load average at start
and end; writes ``benchmarks/out/bench_plugin_cost/results.json``.
Goal (issue 26): at most +10 % CPU and +50 MB peak memory.
Run: ``.venv/bin/python benchmarks/bench_plugin_cost.py [--n 5] [--smoke]``
(``--smoke``: example-site's pages, one build of each).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))
from common import tree_state  # noqa: E402
from corpora import EXAMPLE_SITE, MATERIAL, MKDOCS_ENV, reduced_config  # noqa: E402

OUT = HERE / "out" / "bench_plugin_cost"
WAYS = ("without the plugin", "DocPilot cold", "DocPilot warm")


@dataclass(frozen=True)
class Build:
    seconds: float  # wall clock
    cpu: float  # user + system of the build process and its children
    peak_mb: float  # the largest resident set of the build process


def measured_build(config: Path) -> Build:
    """`mkdocs build` of ``config`` in a child process, with the kernel's figures for it."""
    began = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "mkdocs", "build", "-q", "-f", str(config)],
        cwd=config.parent,
        env=MKDOCS_ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert child.stderr is not None
    errors = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - began
    if child.returncode:
        raise SystemExit(f"mkdocs build of {config} failed:\n{errors.decode(errors='replace')}")
    # ru_maxrss is in KiB on Linux.
    return Build(seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def configs(work: Path, smoke: bool) -> dict[str, Path]:
    """Per way, its mkdocs.yml: the same pages, theme and extensions."""
    paths = {}
    for way in WAYS:
        folder = work / way.replace(" ", "-")
        folder.mkdir(parents=True, exist_ok=True)
        if smoke:
            config = yaml.safe_load((EXAMPLE_SITE / "mkdocs.yml").read_text(encoding="utf-8"))
            config.update(docs_dir=str(EXAMPLE_SITE / "docs"), site_dir=str(folder / "site"))
            config["plugins"] = ["search", {"docpilot": {}}]
            path = folder / "mkdocs.yml"
        else:
            path = reduced_config(MATERIAL, folder)
            config = yaml.safe_load(path.read_text(encoding="utf-8"))
        if way == "without the plugin":
            config["plugins"] = ["search"]
        else:
            config["plugins"] = ["search", {"docpilot": {"cache_dir": str(folder / "cache")}}]
        path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        paths[way] = path
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=5, help="builds of each way, interleaved")
    parser.add_argument("--smoke", action="store_true", help="example-site, one of each")
    args = parser.parse_args()
    if args.smoke:
        args.n = 1
    shutil.rmtree(OUT, ignore_errors=True)
    paths = configs(OUT, args.smoke)
    loads = [os.getloadavg()[0]]
    builds: dict[str, list[Build]] = {way: [] for way in WAYS}
    warm_cache = paths["DocPilot warm"].parent / "cache"
    measured_build(paths["DocPilot warm"])  # fills the warm way's cache, not counted
    for _ in range(args.n):
        for way in WAYS:
            if way == "DocPilot cold":
                shutil.rmtree(paths[way].parent / "cache", ignore_errors=True)
            builds[way].append(measured_build(paths[way]))
        loads.append(os.getloadavg()[0])
    assert warm_cache.is_dir(), "the plugin wrote no cache: the warm builds are not warm"
    site = "example-site" if args.smoke else "the Material corpus"
    print(f"## bench_plugin_cost on tree {tree_state()}, {time.strftime('%Y-%m-%d %H:%M')}: "
          f"{site}, {args.n} builds of each, interleaved; load average (1 min) "
          f"{min(loads):.1f}-{max(loads):.1f}\n")
    print("| `mkdocs build`, median | CPU s | vs peer | wall s | peak RSS MB | vs peer |")
    print("|---|---:|---:|---:|---:|---:|")
    peer_cpu = statistics.median(b.cpu for b in builds[WAYS[0]])
    peer_mb = statistics.median(b.peak_mb for b in builds[WAYS[0]])
    for way in WAYS:
        cpu = statistics.median(b.cpu for b in builds[way])
        wall = statistics.median(b.seconds for b in builds[way])
        mb = statistics.median(b.peak_mb for b in builds[way])
        print(f"| {way} | {cpu:.2f} | {cpu / peer_cpu:.2f}x ({(cpu / peer_cpu - 1):+.0%}) | "
              f"{wall:.2f} | {mb:.0f} | {mb - peer_mb:+.0f} MB |")
    print("\nGoal: <= +10 % CPU and <= +50 MB peak memory against the build without the plugin.")
    (OUT / "results.json").write_text(json.dumps({
        "tree": tree_state(), "loads": loads,
        "builds": {way: [asdict(b) for b in builds[way]] for way in WAYS},
    }, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
