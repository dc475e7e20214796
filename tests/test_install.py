"""First contact: `pip install` + `- docpilot` + `mkdocs build` works offline, with no
Node, and puts the reduced, precompressed Pyodide core in the site."""

from __future__ import annotations

import gzip
import zipfile

import brotli
import pytest
from docpilot_runtime.pyodide_core import SITE_FILES, STDLIB_MODULES, STDLIB_NAME
from fresh_install import FreshSite, fresh_site

__all__ = ["fresh_site"]


# Building the wheel and installing it with its dependencies into a fresh venv takes
# 1-3 minutes here when the machine is shared; the build itself takes seconds.
@pytest.mark.timeout(900)
def test_plain_install_builds_offline_with_no_node(fresh_site: FreshSite) -> None:
    log = fresh_site.build.stderr
    assert "Documentation built" in log
    assert "docpilot: the widget's in-browser check is unavailable" not in log
    assert "Pyodide from package" in log, log
    runtime = fresh_site.site / "docpilot" / "pyodide"
    for name in SITE_FILES:
        raw = (runtime / name).read_bytes()
        assert gzip.decompress((runtime / f"{name}.gz").read_bytes()) == raw, name
        assert brotli.decompress((runtime / f"{name}.br").read_bytes()) == raw, name
    assert not (runtime / "python_stdlib.zip").exists(), "the full stdlib is not served"
    with zipfile.ZipFile(runtime / STDLIB_NAME) as stdlib:
        modules = {
            n.rstrip("/").removesuffix(".py").removesuffix("/__init__").replace("/", ".")
            for n in stdlib.namelist()
        }
    assert {"json", "re", "pyodide", "_pyodide"} <= modules <= STDLIB_MODULES
    assert "unittest" not in modules and "email.mime.text" not in modules
    # The embedding cache went to XDG_CACHE_HOME, keyed by project, not into the project.
    assert not (fresh_site.project / ".cache").exists()
    projects = list((fresh_site.venv.parent / "home" / "cache" / "docpilot" / "projects").iterdir())
    assert len(projects) == 1 and projects[0].name.startswith("project-")
