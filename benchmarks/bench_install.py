"""What `pip install mkdocs-docpilot` adds to a Material install, and what loads at build.

Added weight: the distributions mkdocs-docpilot pulls in (its requirements, transitively,
without extras) that mkdocs-material does not, and their installed size (the files each
distribution's RECORD lists, as installed here). ``--fresh``: instead, two fresh venvs
(Material alone, then Material + the wheel built from this tree) and their difference;
that takes minutes. What loads at build: ``python -X importtime`` of the plugin's module
(what `mkdocs build` imports when mkdocs.yml lists ``- docpilot``), its total and the
heaviest top-level packages.

Run: ``.venv/bin/python benchmarks/bench_install.py [--smoke] [--fresh]``
(``--smoke``: the closure and one import trace, no venvs; the default is the same with
three import traces, median).
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
from collections import Counter
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent


def _name(text: str) -> str:
    return re.sub(r"[-_.]+", "-", text).lower()


def closure(root: str) -> set[str]:
    """``root`` and every distribution its requirements need here (extras left out)."""
    seen: set[str] = set()
    todo = [root]
    while todo:
        name = _name(todo.pop())
        if name in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        seen.add(name)
        for line in dist.requires or []:
            requirement = Requirement(line)
            if requirement.marker and not requirement.marker.evaluate({"extra": ""}):
                continue
            todo.append(requirement.name)
    return seen


def installed_bytes(name: str) -> int:
    dist = metadata.distribution(name)
    total = 0
    for file in dist.files or []:
        path = Path(str(dist.locate_file(file)))
        if path.suffix != ".pyc" and path.is_file():  # pyc depend on compile settings
            total += path.stat().st_size
    return total


def importtime(module: str) -> tuple[float, int, list[tuple[str, float]]]:
    """(seconds, modules imported, [(top-level package, self seconds)]) for one import."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    by_top: Counter[str] = Counter()
    count, total = 0, 0
    for line in done.stderr.splitlines():
        found = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
        if not found:
            continue
        count += 1
        by_top[found.group(4).split(".")[0]] += int(found.group(1))
        if found.group(4) == module:
            total = int(found.group(2))
    return total / 1e6, count, [(k, v / 1e6) for k, v in by_top.most_common(8)]


def fresh(work: Path) -> dict[str, set[str]]:
    wheels = work / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(ROOT)],
        check=True,
    )
    (wheel,) = wheels.glob("*.whl")
    out = {}
    for label, extra in (("material", []), ("material+docpilot", [str(wheel)])):
        venv = work / label
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip"]
        subprocess.run([*pip, "install", "-q", "--no-compile", "mkdocs-material", *extra], check=True)
        listed = subprocess.run([*pip, "list", "--format=freeze"], capture_output=True, text=True)
        out[label] = {_name(line.split("==")[0]) for line in listed.stdout.split()}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--fresh", action="store_true", help="measure two fresh venvs")
    args = parser.parse_args()
    material = closure("mkdocs-material")
    ours = closure("mkdocs-docpilot")
    if args.fresh:
        with tempfile.TemporaryDirectory() as work:
            lists = fresh(Path(work))
        print(f"fresh venvs: material {len(lists['material'])} distributions, with docpilot "
              f"{len(lists['material+docpilot'])}")
    added = sorted(ours - material)
    sizes = {name: installed_bytes(name) for name in added}
    print(f"mkdocs-docpilot adds {len(added)} distributions, {sum(sizes.values()) / 1e6:.1f} MB "
          "(installed files, no .pyc) to mkdocs-material:\n")
    print("| distribution | MB |\n|---|---:|")
    for name, size in sorted(sizes.items(), key=lambda kv: -kv[1]):
        print(f"| {name} | {size / 1e6:.1f} |")
    runs = [importtime("mkdocs_docpilot.plugin") for _ in range(1 if args.smoke else 3)]
    seconds = statistics.median(r[0] for r in runs)
    print(f"\nimport mkdocs_docpilot.plugin: {seconds:.2f} s, {runs[0][1]} modules; heaviest:\n")
    print("| top-level package | s (own import time) |\n|---|---:|")
    for top, own in runs[0][2]:
        print(f"| {top} | {own:.3f} |")


if __name__ == "__main__":
    main()
