"""First contact: `pip install` + `- docpilot` + `mkdocs build` works offline, with no
Node, and puts the reduced, precompressed Pyodide core in the site."""

from __future__ import annotations

import gzip
import zipfile
from pathlib import Path

import brotli
import pytest
from docpilot_runtime.browser.pyodide_core import SITE_FILES, STDLIB_MODULES, STDLIB_NAME
from docpilot_runtime.index.cache import default_cache_dir
from fresh_install import FreshSite


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


def test_default_cache_is_per_project_under_xdg_cache_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    one, two = default_cache_dir(tmp_path / "a" / "docs"), default_cache_dir(tmp_path / "b" / "docs")
    assert one != two and one.parent == two.parent == tmp_path / "xdg" / "docpilot" / "projects"
    assert one.name.startswith("docs-") and one == default_cache_dir(tmp_path / "a" / "docs")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir(tmp_path / "a").is_relative_to(tmp_path / "home" / ".cache" / "docpilot")
