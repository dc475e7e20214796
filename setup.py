"""The wheel build hook: the package carries the pinned Pyodide core as package data.

Before setuptools copies package data, `build_py` makes sure
runtime/docpilot_runtime/assets/pyodide/ holds Pyodide's site files (reduced stdlib,
.gz/.br siblings): from node_modules/pyodide when `npm install` put it there, else
fetched over HTTPS from the configured npm registry and checked against a pinned sha256
(runtime/docpilot_runtime/browser/pyodide_core.py does both). Git never holds these files. An
editable install skips this: scripts/setup.sh fills the same directory.
"""

from __future__ import annotations

import importlib.util
import tempfile
from pathlib import Path
from typing import Any

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
ASSETS = HERE / "runtime" / "docpilot_runtime" / "assets" / "pyodide"


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
    core = _core()
    if core.is_prepared(ASSETS):
        return
    npm_copy = HERE / "node_modules" / "pyodide"
    if (npm_copy / "python_stdlib.zip").is_file():
        core.prepare(npm_copy, ASSETS, log=print)
        return
    with tempfile.TemporaryDirectory() as work:
        core.prepare(core.fetch_core(Path(work), log=print), ASSETS, log=print)


class BuildPyWithPyodide(build_py):
    def run(self) -> None:
        if not getattr(self, "editable_mode", False):
            ensure_pyodide_assets()
        super().run()


setup(cmdclass={"build_py": BuildPyWithPyodide})
