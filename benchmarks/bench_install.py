"""What installing mkdocs-docpilot adds to a Material install, per dependency, beside a peer
plugin, and what loads at build.

Side by side, in one run (fresh venvs, each made with ``python -m venv`` and given
mkdocs-material first): the wheel built from this tree, then the peer (``--peer``,
default mkdocs-ask, the closest plugin on the index that adds an assistant to MkDocs), each
installed by the venv's own pip; what each adds over Material alone: distributions,
installed MB (the files each distribution's RECORD lists, ``.pyc`` included as pip wrote
them, and without) and the seconds the ``pip install`` took.

Per dependency: for each requirement mkdocs-docpilot declares (and a few groups: the
embedder, the server stack), the distributions its requirement closure adds to Material's,
their MB, and the part only it brings (no other requirement needs it): what leaving it out
of the default install would save.

What loads at build: ``python -X importtime`` of the plugin's module (what `mkdocs build`
imports when mkdocs.yml lists ``- docpilot``): its total, the heaviest top-level packages,
and for each third-party package the docpilot_runtime module that first imports it.

Run: ``.venv/bin/python benchmarks/bench_install.py [--smoke] [--peer NAME]``
(``--smoke``: no venvs; the per-dependency table from this environment, one import trace).
"""

from __future__ import annotations

import argparse
import importlib.metadata as metadata
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from common import tree_state
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "mkdocs-docpilot"
BASE = "mkdocs-material"
# Requirements counted together: what one feature needs.
GROUPS = {
    "embedder (wordllama, tokenizers, safetensors)": ("wordllama", "tokenizers", "safetensors"),
    "server stack (starlette, uvicorn, httpx)": ("starlette", "uvicorn", "httpx"),
    "minifiers (rjsmin, rcssmin)": ("rjsmin", "rcssmin"),
}

# Modules a static-site owner's build has no use for: the server, its records, metrics,
# caps and model calls.
RUNTIME_SIDE = tuple(
    f"docpilot_runtime.{m}"
    for m in (
        "app",
        "records",
        "metrics",
        "caps",
        "caps_shared",
        "security_headers",
        "providers",
        "second_opinion",
        "upstream",
        "bundle_source",
        "bundle_swap",
        "mcp_server",
        "serving",
        "turn",
        "answer",
        "report",
    )
)

Dists = Mapping[str, metadata.Distribution]


def _name(text: str) -> str:
    return re.sub(r"[-_.]+", "-", text).lower()


def distributions(site_packages: Iterable[str] | None = None) -> dict[str, metadata.Distribution]:
    """Installed distributions by normalised name (of a venv, given its site-packages)."""
    found = (
        metadata.distributions(path=list(site_packages))
        if site_packages
        else metadata.distributions()
    )
    return {_name(d.metadata["Name"]): d for d in found}


def requirements(dist: metadata.Distribution) -> list[str]:
    """The names ``dist`` requires without extras."""
    out = []
    for line in dist.requires or []:
        requirement = Requirement(line)
        if requirement.marker and not requirement.marker.evaluate({"extra": ""}):
            continue
        out.append(_name(requirement.name))
    return out


def closure(roots: Iterable[str], dists: Dists) -> set[str]:
    """``roots`` and every installed distribution their requirements need (no extras)."""
    seen: set[str] = set()
    todo = [_name(r) for r in roots]
    while todo:
        name = todo.pop()
        if name in seen or name not in dists:
            continue
        seen.add(name)
        todo.extend(requirements(dists[name]))
    return seen


def installed_bytes(dist: metadata.Distribution, pyc: bool = False) -> int:
    total = 0
    for file in dist.files or []:
        path = Path(str(dist.locate_file(file)))
        if (pyc or path.suffix != ".pyc") and path.is_file():
            total += path.stat().st_size
    return total


@dataclass(frozen=True)
class Added:
    """What one install added to a venv that held Material alone."""

    label: str
    names: frozenset[str]
    megabytes: float
    megabytes_no_pyc: float
    seconds: float


def _site_packages(venv: Path) -> list[str]:
    return [str(p) for p in (venv / "lib").glob("python3*/site-packages")]


def _quiet(args: list[str], env: Mapping[str, str] | None = None) -> None:
    """Run ``args``; its output is shown only when it fails."""
    done = subprocess.run(args, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"{' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")


def measure_install(work: Path, label: str, requirement: str) -> tuple[Added, Path]:
    """A fresh venv with Material, then ``requirement`` installed and timed; and the venv."""
    venv = work / label
    _quiet([sys.executable, "-m", "venv", str(venv)])
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    env = {**os.environ, "PIP_CACHE_DIR": str(work / "pip-cache")}
    _quiet([*pip, BASE], env)
    before = set(distributions(_site_packages(venv)))
    started = time.monotonic()
    _quiet([*pip, requirement], env)
    seconds = time.monotonic() - started
    after = distributions(_site_packages(venv))
    names = frozenset(set(after) - before)
    megabytes = sum(installed_bytes(after[n], pyc=True) for n in names) / 1e6
    no_pyc = sum(installed_bytes(after[n]) for n in names) / 1e6
    return Added(label, names, megabytes, no_pyc, seconds), venv


def build_wheel(work: Path) -> Path:
    wheels = work / "wheels"
    _quiet([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(ROOT)])
    (wheel,) = wheels.glob("mkdocs_docpilot-*.whl")
    return wheel


def per_dependency(dists: Dists) -> list[tuple[str, int, float, int, float]]:
    """(requirement or group, distributions added, MB, of which only it brings, MB)."""
    base = closure([BASE], dists)
    tops = requirements(dists[_name(PACKAGE)])
    rows: dict[str, tuple[str, ...]] = {top: (top,) for top in tops}
    rows.update(GROUPS)
    rows[f"{PACKAGE} itself"] = (PACKAGE,)
    brings = {top: closure([top], dists) - base for top in tops}
    out = []
    for label, members in rows.items():
        if label == f"{PACKAGE} itself":
            mine = exclusive = {_name(PACKAGE)}
        else:
            mine = set().union(*(brings[m] for m in members if m in brings))
            others = set().union(*(brings[t] for t in tops if t not in members))
            exclusive = mine - others
        size = sum(installed_bytes(dists[n]) for n in mine) / 1e6
        only = sum(installed_bytes(dists[n]) for n in exclusive) / 1e6
        out.append((label, len(mine), size, len(exclusive), only))
    return out


def importtime(module: str) -> tuple[float, list[str]]:
    """(seconds for ``import module``, the raw -X importtime lines)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    lines = [line for line in done.stderr.splitlines() if line.startswith("import time:")]
    total = 0
    for line in lines:
        found = re.match(r"import time:\s+\d+ \|\s+(\d+) \|\s*(\S+)", line)
        if found and found.group(2) == module:
            total = int(found.group(1))
    return total / 1e6, lines


def heaviest(lines: list[str]) -> list[tuple[str, float]]:
    by_top: Counter[str] = Counter()
    for line in lines:
        found = re.match(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)", line)
        if found:
            by_top[found.group(2).split(".")[0]] += int(found.group(1))
    return [(k, v / 1e6) for k, v in by_top.most_common(8)]


def import_chains(
    lines: list[str], ours: tuple[str, ...], key: Callable[[str], str | None]
) -> dict[str, str]:
    """For each group of modules (``key`` names a module's group, None for none), the
    chain of our modules (outermost first) through which it is first imported. importtime prints a module after its imports,
    indented one level deeper, so a line's importer is the next line up one level."""
    parsed = []
    for line in lines:
        found = re.match(r"import time:\s+\d+ \|\s+\d+ \|( *)(\S+)", line)
        if found:
            parsed.append((len(found.group(1)) // 2, found.group(2)))
    out: dict[str, str] = {}
    for index, (depth, name) in enumerate(parsed):
        top = key(name)
        if top is None or top in out:
            continue
        chain = []
        for later_depth, later in parsed[index + 1 :]:
            if later_depth < depth:  # an importer of the line, one level up
                depth = later_depth
                if later.startswith(ours):
                    chain.append(later.removeprefix("docpilot_runtime."))
        out[top] = " → ".join(reversed(chain))
    return out


def _table(header: tuple[str, ...], rows: Iterable[tuple[object, ...]]) -> None:
    """A Markdown table; columns that hold only numbers are right-aligned."""
    rows = list(rows)
    numeric = [all(isinstance(r[i], int | float) for r in rows) for i in range(len(header))]
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---:" if n else "---" for n in numeric) + "|")
    for row in rows:
        print("| " + " | ".join(f"{c:.1f}" if isinstance(c, float) else str(c) for c in row) + " |")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--peer", default="mkdocs-ask", help="the plugin to compare with")
    args = parser.parse_args()
    print(
        f"tree {tree_state()}, Python {sys.version.split()[0]}, "
        f"load {os.getloadavg()[0]:.1f} (1 min) at start\n"
    )
    if args.smoke:
        dists = distributions()
        ours = closure([PACKAGE], dists) - closure([BASE], dists)
        no_pyc = sum(installed_bytes(dists[n]) for n in ours) / 1e6
        # This environment's closure: the MB with .pyc and the seconds are not known.
        added = [Added(PACKAGE, frozenset(ours), float("nan"), no_pyc, float("nan"))]
        rows = per_dependency(dists)
    else:
        with tempfile.TemporaryDirectory(prefix="bench-install-") as tmp:
            work = Path(tmp)
            mine, venv = measure_install(work, PACKAGE, str(build_wheel(work)))
            peer, _ = measure_install(work, args.peer, args.peer)
            added = [mine, peer]
            rows = per_dependency(distributions(_site_packages(venv)))
    where = "this environment: --smoke" if args.smoke else "fresh venvs, one run"
    print(f"Added to {BASE} ({where}):\n")
    _table(
        ("install", "distributions", "MB", "MB without .pyc", "pip install s", "added"),
        [
            (
                a.label,
                len(a.names),
                a.megabytes,
                a.megabytes_no_pyc,
                a.seconds,
                ", ".join(sorted(a.names)) if len(a.names) < 6 else "(see below)",
            )
            for a in added
        ],
    )
    print(f"Per requirement of {PACKAGE} (no .pyc; 'only it' = what no other requirement needs):\n")
    _table(
        ("requirement", "distributions", "MB", "only it: distributions", "only it: MB"),
        sorted(rows, key=lambda row: -row[2]),
    )
    runs = [importtime("mkdocs_docpilot.plugin") for _ in range(1 if args.smoke else 3)]
    seconds = statistics.median(r[0] for r in runs)
    lines = runs[0][1]
    print(f"import mkdocs_docpilot.plugin: {seconds:.2f} s, {len(lines)} modules; heaviest:\n")
    _table(("top-level package", "s (own import time)"), heaviest(lines))
    # The import runs in this environment: its distributions name the packages.
    here = distributions()
    ours = {"docpilot_runtime", "mkdocs_docpilot"}
    third_party = {m for d in closure([PACKAGE], here) for m in _top_level(here[d])} - ours
    chains = import_chains(
        lines, tuple(ours), lambda n: n.split(".")[0] if n.split(".")[0] in third_party else None
    )
    runtime = sorted(
        {
            line.split("|")[-1].strip()
            for line in lines
            if line.split("|")[-1].strip().startswith("docpilot_runtime")
        }
    )
    print(
        f"The plugin's import loads {len(runtime)} docpilot_runtime modules; "
        "third-party packages it loads, and through which of ours each is first imported:\n"
    )
    _table(("package", "imported through"), sorted(chains.items()))
    print("Runtime-side modules of ours the plugin's import loads, and through what:\n")
    runtime_side = import_chains(
        lines,
        tuple(ours),
        lambda n: next((m for m in RUNTIME_SIDE if n == m or n.startswith(f"{m}.")), None),
    )
    _table(("module", "imported through"), sorted(runtime_side.items()))


def _top_level(dist: metadata.Distribution) -> set[str]:
    """The importable top-level names a distribution installs."""
    text = dist.read_text("top_level.txt")
    if text:
        return set(text.split())
    return {
        str(f).split("/")[0].removesuffix(".py")
        for f in dist.files or []
        if "/" in str(f) and not str(f).split("/")[0].endswith((".dist-info", ".data"))
    }


if __name__ == "__main__":
    main()
