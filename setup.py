"""The build hooks: the sdist and the wheel carry the pinned Pyodide core as package data.

Before setuptools lists the sdist's files or copies the wheel's package data, `sdist` and
`build_py` make sure runtime/docpilot_runtime/pyodide-core/ holds Pyodide's site files
(reduced stdlib, .gz/.br siblings): from node_modules/pyodide when `npm ci` put it there
(no network), else fetched over HTTPS from the configured npm registry and checked
against a pinned sha256 (runtime/docpilot_runtime/browser/pyodide_core.py does both). A wheel
built from the sdist finds them already there. Git never holds these files. An editable
install skips this: scripts/setup.sh fills the same directory.
"""

from __future__ import annotations

import importlib.util
import json
import tempfile
from pathlib import Path
from typing import Any

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = Path(__file__).resolve().parent
ASSETS = HERE / "runtime" / "docpilot_runtime" / "pyodide-core"


def _core() -> Any:
    """runtime/docpilot_runtime/browser/pyodide_core.py, loaded by path (standard library only)."""
    spec = importlib.util.spec_from_file_location(
        "pyodide_core", HERE / "runtime" / "docpilot_runtime" / "browser" / "pyodide_core.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def ensure_pyodide_assets() -> None:
    """Fill ASSETS unless it holds the pinned version; a failure says how to build offline."""
    core = _core()
    version = core.PYODIDE_VERSION
    if core.is_prepared(ASSETS):
        print(f"Pyodide {version}: already prepared in {ASSETS}")
        return
    npm_copy = HERE / "node_modules" / "pyodide"
    if (npm_copy / "python_stdlib.zip").is_file():
        found = json.loads((npm_copy / "package.json").read_text(encoding="utf-8"))["version"]
        if found != version:
            raise SystemExit(
                f"error: {npm_copy} holds Pyodide {found}, this package pins {version}: "
                "run `npm ci` to install the version package.json pins"
            )
        print(f"Pyodide {version}: from {npm_copy}, no network needed")
        core.prepare(npm_copy, ASSETS, log=print)
        return
    print(f"Pyodide {version}: no node_modules/pyodide, fetching it from the npm registry")
    try:
        with tempfile.TemporaryDirectory() as work:
            core.prepare(core.fetch_core(Path(work), log=print), ASSETS, log=print)
    except (core.CoreError, OSError) as exc:
        raise SystemExit(
            f"error: building mkdocs-docpilot needs Pyodide {version}'s core files, and "
            f"fetching them failed: {exc}. To build offline, run `npm ci` in the source "
            "tree first (package.json pins the version): the build then reads "
            "node_modules/pyodide and makes no connection."
        ) from None


class BuildPyWithPyodide(build_py):
    def run(self) -> None:
        if not getattr(self, "editable_mode", False):
            ensure_pyodide_assets()
        super().run()


class SdistWithPyodide(sdist):
    """The sdist carries the prepared files, so building a wheel from it needs no network."""

    def run(self) -> None:
        ensure_pyodide_assets()
        super().run()


setup(cmdclass={"build_py": BuildPyWithPyodide, "sdist": SdistWithPyodide})
