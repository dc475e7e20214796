"""The release workflow's build job, run here: its ``run`` steps in order, in a copy of
this tree that holds only what git would check out (no prepared Pyodide, no .venv).

``python`` is a fresh venv standing in for the runner's Python; ``npm ci`` runs for real
against the configured npm registry; ``unshare -rn`` cuts the network for the build, as
on the runner. What the job uploads (``dist/``) stands in for the published release in
the install tests. Built once per test session (`release_build`)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from corpora import ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"


def workflow() -> dict[str, Any]:
    """release.yml parsed; YAML 1.1 reads the key ``on`` as True, so it is renamed back."""
    parsed: dict[Any, Any] = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    if True in parsed:
        parsed["on"] = parsed.pop(True)
    return parsed


def checkout(dest: Path) -> Path:
    """Copy the files git tracks (as they are in the work tree) and new files it does
    not ignore into ``dest``: what a fresh clone of this branch would hold."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


@dataclass(frozen=True)
class ReleaseBuild:
    tree: Path  # the checkout the job built in
    python: Path  # the venv's interpreter, with the build requirements installed
    dist: Path  # what the job uploads: the sdist and the wheel
    log: str  # every step's output, in order

    @property
    def wheel(self) -> Path:
        (wheel,) = self.dist.glob("mkdocs_docpilot-*.whl")
        return wheel

    @property
    def sdist(self) -> Path:
        (sdist,) = self.dist.glob("mkdocs_docpilot-*.tar.gz")
        return sdist


def run_build_job(work: Path) -> ReleaseBuild:
    tree = checkout(work / "checkout")
    venv = work / "runner-python"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    # The runner's PATH: its Python first, then the system's tools (npm, unshare).
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(Path.home()), "LANG": "C.UTF-8"}
    log = []
    steps = workflow()["jobs"]["build"]["steps"]
    for step in steps:
        if "run" not in step:
            continue
        done = subprocess.run(
            ["bash", "-eo", "pipefail", "-c", step["run"]],
            cwd=tree,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        log.append(f"$ {step['run']}\n{done.stdout}")
        if done.returncode != 0:
            pytest.fail(
                f"release.yml step {step.get('name')!r} exited {done.returncode}:\n{log[-1]}"
            )
    (upload,) = [s for s in steps if s.get("uses", "").startswith("actions/upload-artifact")]
    return ReleaseBuild(
        tree, venv / "bin" / "python", tree / upload["with"]["path"], "\n".join(log)
    )


@pytest.fixture(scope="session")
def release_build(tmp_path_factory: pytest.TempPathFactory) -> ReleaseBuild:
    """Once per session: under pytest-xdist, the modules that use it run on one worker
    (tests/conftest.py's ONE_WORKER), so no two workers build it."""
    return run_build_job(tmp_path_factory.mktemp("release"))


__all__ = ["ReleaseBuild", "checkout", "release_build", "workflow"]
