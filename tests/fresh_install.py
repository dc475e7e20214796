"""A plain install, as a new site owner makes one: the wheel built from this tree, put in
a fresh venv (no system site-packages) with MkDocs and Material, and a site made with
`mkdocs new` + `theme: material` + `- docpilot`, built offline with no npm on PATH and
empty HOME / XDG_CACHE_HOME. Built once for all the session's processes (`fresh_site`,
through tests/shared_builds.py)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from types import ModuleType

import pytest
from corpora import ROOT
from shared_builds import SiteBuilds


def _load_check_dist() -> ModuleType:
    """scripts/check_dist.py (the release workflow's check; the scripts are no package)."""
    spec = importlib.util.spec_from_file_location("check_dist", ROOT / "scripts" / "check_dist.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_dist"] = module
    spec.loader.exec_module(module)
    return module


check_dist = _load_check_dist()


@dataclass(frozen=True)
class FreshSite:
    venv: Path
    project: Path
    site: Path
    env: dict[str, str]  # what the build ran with: no npm on PATH, empty HOME and caches
    build: subprocess.CompletedProcess[str]


def _run(args: list[str]) -> None:
    try:
        check_dist.run(args)
    except check_dist.CheckError as exc:
        pytest.fail(str(exc))


def _env(work: Path) -> dict[str, str]:
    """Only the venv's scripts on PATH (no npm, no node: /usr/bin is not there), an empty
    HOME and cache."""
    home = work / "home"
    return {
        "PATH": str(work / "venv" / "bin"),
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / "cache"),
        "NO_MKDOCS_2_WARNING": "1",
        "LANG": "C.UTF-8",
    }


def make_fresh_site(work: Path) -> FreshSite:
    wheels = work / "wheels"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(ROOT)])
    (wheel,) = wheels.glob("mkdocs_docpilot-*.whl")
    venv = work / "venv"
    # No pip inside the venv (this interpreter's pip installs into it: faster), and no
    # byte-compiling: both only cost time on a shared machine.
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install"]
    _run([*pip, "-q", "--no-compile", "--disable-pip-version-check", str(wheel), "mkdocs-material"])
    env = _env(work)
    Path(env["XDG_CACHE_HOME"]).mkdir(parents=True)
    assert shutil.which("npm", path=env["PATH"]) is None
    project = work / "project"
    try:
        build = check_dist.build_small_site(venv, project, env)
    except check_dist.CheckError as exc:
        pytest.fail(str(exc))
    return FreshSite(venv, project, project / "site", env, build)


@pytest.fixture(scope="session")
def fresh_site(site_builds: SiteBuilds) -> FreshSite:
    # Made again each day: pip installs the newest MkDocs and Material, as an owner would.
    shared = site_builds.get(
        {"fresh install": [check_dist.MKDOCS_YML, check_dist.PAGE], "day": date.today().isoformat()},
        lambda work: make_fresh_site(work).build,
        site="project/site",
    )
    work = shared.folder
    build = subprocess.CompletedProcess(["mkdocs", "build"], 0, shared.stdout, shared.stderr)
    return FreshSite(work / "venv", work / "project", shared.site, _env(work), build)


__all__ = ["FreshSite", "check_dist", "fresh_site", "make_fresh_site", "os"]
