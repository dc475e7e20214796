"""Every install line in README.md and example-site (its docs, the GitHub Pages workflow,
the Dockerfile, the systemd unit) works as written on a fresh machine.

The release workflow's build job (tests/release_build.py) stands in for the published
release: its sdist for the repository (``git+`` lines), its wheel in ``dist/`` for a
built wheel. Each line runs in bash, as written but for that swap, in an owner's shell:
a venv made with ``python -m venv`` and active, nothing else on PATH (no node, no npm),
an empty HOME, the package index as this machine configures it, a pip cache of its own,
and pip compiling no bytecode at install. Lines that install DocPilot run in a new venv
each, then a small Material site is built with it offline (or, with no MkDocs,
``docpilot --help`` runs); extras, reinstalls and tools go, in order, into the first such
venv, which then passes ``pip check`` and builds the site again. ``pip wheel`` lines run
first, in one folder whose ``wheels/`` every venv's folder gets (the Dockerfile installs
from it)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from fresh_install import check_dist
from install_lines import REPOSITORY, InstallLine, documented_install_lines, stand_in
from release_build import ReleaseBuild

BASH = shutil.which("bash") or "/bin/bash"  # found here: the owner's PATH holds only the venv


def test_docs_install_docpilot_only_from_the_repository_or_a_built_wheel() -> None:
    lines = documented_install_lines()
    places = {where.split(":")[0] for line in lines for where in line.where}
    assert {
        "README.md",
        "example-site/docs/getting-started/installation.md",
        "example-site/docs/guides/static-sites.md",
        "example-site/docs/guides/deploying-the-runtime.md",
        "example-site/deploy/github-pages.yml",
        "example-site/deploy/Dockerfile",
        "example-site/deploy/docpilot.service",
    } <= places, places
    for line in lines:
        if "docpilot" in line.command:
            # Not yet on the index: the repository, a wheel file, or a folder of wheels.
            assert (
                f"git+{REPOSITORY}" in line.command
                or "--find-links" in line.command
                or ("mkdocs_docpilot-" in line.command and ".whl" in line.command)
            ), line
    kinds = {line.kind for line in lines}
    assert kinds == {"fresh", "addition", "prepare"}, kinds


@dataclass(frozen=True)
class OwnerMachine:
    """Where the lines run: a folder per venv, an empty HOME, the artifacts to hand."""

    work: Path
    release: ReleaseBuild
    python: str  # the interpreter an owner's `python` is (this one's base)

    def shell(self, venv: Path, home: Path) -> dict[str, str]:
        shims = self.work / "shims"
        if not shims.exists():
            shims.mkdir()
            for name in ("python", "python3"):
                (shims / name).symlink_to(self.python)
        env = {
            key: value for key, value in os.environ.items() if key.startswith("PIP_")
        }  # this machine's index settings
        env.update(
            PATH=f"{venv / 'bin'}:{shims}",
            VIRTUAL_ENV=str(venv),
            HOME=str(home),
            PIP_CACHE_DIR=str(self.work / "pip-cache"),
            PIP_DISABLE_PIP_VERSION_CHECK="1",
            # pip compiles every module it installs, most of its work in these venvs
            # (NumPy, MkDocs, Material, Pygments); nothing checked needs it, as a first
            # import compiles what it uses. pip takes the variable as the value of
            # --no-compile's destination, `compile`: "false" turns compiling off.
            PIP_NO_COMPILE="false",
            LANG="C.UTF-8",
            NO_MKDOCS_2_WARNING="1",
        )
        for tool in ("node", "npm", "git"):
            assert shutil.which(tool, path=env["PATH"]) is None, tool
        return env

    def folder(self, name: str, prepared: Path | None) -> Path:
        """A working folder holding dist/ (the release's two files) and wheels/."""
        folder = self.work / name
        (folder / "dist").mkdir(parents=True)
        for artifact in (self.release.wheel, self.release.sdist):
            shutil.copy(artifact, folder / "dist")
        if prepared is not None and (prepared / "wheels").is_dir():
            (folder / "wheels").symlink_to(prepared / "wheels")
        return folder

    def venv(self, folder: Path) -> Path:
        venv = folder / ".venv"
        subprocess.run([self.python, "-m", "venv", str(venv)], check=True)
        return venv

    def run(self, line: InstallLine, folder: Path, venv: Path) -> float:
        command = stand_in(line.command, self.release.sdist)
        started = time.monotonic()
        done = subprocess.run(
            [BASH, "-eo", "pipefail", "-c", command],
            cwd=folder,
            env=self.shell(venv, folder / "home"),
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            pytest.fail(
                f"{line.command!r} (written at {', '.join(line.where)}) exited "
                f"{done.returncode} as {command!r}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            )
        return time.monotonic() - started


def _works(machine: OwnerMachine, folder: Path, venv: Path, label: str) -> str:
    """Build the small site with the venv's MkDocs, offline; with no MkDocs there, run
    the runtime's command."""
    env = check_dist.owner_env(venv, folder / f"home-{label}")
    if (venv / "bin" / "mkdocs").exists():
        check_dist.build_small_site(venv, folder / f"site-{label}", env)
        return "site built offline"
    done = subprocess.run(
        [str(venv / "bin" / "docpilot"), "--help"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0 and "serve" in done.stdout, done.stderr
    return "docpilot --help"


# Six new venvs, each installing DocPilot and its dependencies, and five site builds:
# several minutes on a shared two-core machine.
@pytest.mark.timeout(2400)
def test_every_documented_install_line_works_on_a_fresh_machine(
    release_build: ReleaseBuild, tmp_path: Path
) -> None:
    lines = documented_install_lines()
    machine = OwnerMachine(
        tmp_path, release_build, getattr(sys, "_base_executable", sys.executable)
    )
    report: list[str] = []
    step = machine.run

    def checked(folder: Path, venv: Path, label: str) -> None:
        try:
            report.append(f"    -> {_works(machine, folder, venv, label)}")
        except check_dist.CheckError as exc:
            pytest.fail(f"after {label}: {exc}")

    fresh = [line for line in lines if line.kind == "fresh"]
    # The first new venv is the one the additions go into: the one MkDocs builds with.
    first = next(line for line in fresh if "mkdocs-material" in line.command)
    fresh.remove(first)
    base_folder = machine.folder("base", None)
    base = machine.venv(base_folder)
    report.append(f"{step(first, base_folder, base):6.1f} s  {first.command}")
    checked(base_folder, base, "base")

    prepared = base_folder  # `pip wheel -w wheels/` writes here, in the base venv
    for line in (line for line in lines if line.kind == "prepare"):
        report.append(f"{step(line, prepared, base):6.1f} s  {line.command}")

    for number, line in enumerate(fresh):
        folder = machine.folder(f"fresh-{number}", prepared)
        venv = machine.venv(folder)
        report.append(f"{step(line, folder, venv):6.1f} s  {line.command}")
        checked(folder, venv, f"fresh-{number}")

    for line in (line for line in lines if line.kind == "addition"):
        report.append(f"{step(line, base_folder, base):6.1f} s  {line.command}")
    consistent = subprocess.run(
        [str(base / "bin" / "python"), "-m", "pip", "check"], capture_output=True, text=True
    )
    assert consistent.returncode == 0, consistent.stdout
    checked(base_folder, base, "after-additions")
    print("\n".join(report))
    assert len(report) >= len(lines)
