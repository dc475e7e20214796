"""A plain install, as a new site owner makes one: the wheel built from this tree, put in
a fresh venv (no system site-packages) with MkDocs and Material, and a site made with
`mkdocs new` + `theme: material` + `- docpilot`, built offline with no npm on PATH and
empty HOME / XDG_CACHE_HOME. Built once for all the session's processes (`fresh_site`,
through tests/shared_builds.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import pytest
from corpora import ROOT
from shared_builds import SiteBuilds

MKDOCS_YML = """site_name: First contact
theme:
  name: material
plugins:
  - search
  - docpilot
"""
PAGE = """# Installing the widget

Add `docpilot` to the `plugins` list of mkdocs.yml and run `mkdocs build`.
The reader then asks questions in the panel at the bottom right of every page.

## Changing the colours

The widget follows the theme's primary colour; set `accent` to change it.
"""


@dataclass(frozen=True)
class FreshSite:
    venv: Path
    project: Path
    site: Path
    env: dict[str, str]  # what the build ran with: no npm on PATH, empty HOME and caches
    build: subprocess.CompletedProcess[str]


def _run(args: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]
    if done.returncode != 0:
        pytest.fail(f"{' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done  # type: ignore[no-any-return]


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
    if subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode != 0:
        pytest.fail("`unshare -n` does not work here: the test needs it to build offline")
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
    _run([str(venv / "bin" / "mkdocs"), "new", str(project)], env=env)
    (project / "mkdocs.yml").write_text(MKDOCS_YML, encoding="utf-8")
    (project / "docs" / "install.md").write_text(PAGE, encoding="utf-8")
    unshare = shutil.which("unshare") or "unshare"
    build = _run(
        [unshare, "-n", str(venv / "bin" / "mkdocs"), "build", "--strict"],
        cwd=project,
        env=env,
    )
    return FreshSite(venv, project, project / "site", env, build)


@pytest.fixture(scope="session")
def fresh_site(site_builds: SiteBuilds) -> FreshSite:
    # Made again each day: pip installs the newest MkDocs and Material, as an owner would.
    shared = site_builds.get(
        {"fresh install": [MKDOCS_YML, PAGE], "day": date.today().isoformat()},
        lambda work: make_fresh_site(work).build,
        site="project/site",
    )
    work = shared.folder
    build = subprocess.CompletedProcess(["mkdocs", "build"], 0, shared.stdout, shared.stderr)
    return FreshSite(work / "venv", work / "project", shared.site, _env(work), build)


__all__ = ["FreshSite", "fresh_site", "make_fresh_site", "os"]
