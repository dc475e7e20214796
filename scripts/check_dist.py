"""Check built distributions as a new site owner meets them.

Each of a dist folder's wheel and sdist is installed, with mkdocs-material, into a fresh
venv from the package index; then a small Material site with ``- docpilot`` is built
with that venv's ``mkdocs`` with no Node on PATH, an empty HOME and the network cut off
(``unshare -n``): the build must take Pyodide from the package and write the widget, the
bundle and Pyodide's files. The release workflow runs this on what it is about to
publish; the tests build their fresh sites with `build_small_site`. Standard library only.

Run: ``python scripts/check_dist.py dist/ [--tag v0.1.0]`` (``--tag``: the distributions
must be the version the tag names).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PACKAGE = "mkdocs-docpilot"
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
# What the small site must hold once built (the plugin's output, Pyodide precompressed).
SITE_FILES = (
    "docpilot/bundle.msgpack",
    "docpilot/static.json",
    "docpilot/pyodide/pyodide.asm.wasm",
    "docpilot/pyodide/pyodide.asm.wasm.gz",
)


class CheckError(RuntimeError):
    """A distribution failed a check; the message names the step and carries its output."""


def run(args: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    """Run ``args``; a non-zero exit is a CheckError with the command's output."""
    done = subprocess.run(args, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]
    if done.returncode != 0:
        raise CheckError(
            f"{' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        )
    return done  # type: ignore[no-any-return]


def network_off() -> list[str]:
    """The command prefix that runs a program with no network: ``unshare -n`` as root,
    ``unshare -rn`` (a user namespace) otherwise."""
    unshare = shutil.which("unshare")
    for flags in ("-n", "-rn"):
        if (
            unshare
            and subprocess.run([unshare, flags, "true"], capture_output=True).returncode == 0
        ):
            return [unshare, flags]
    raise CheckError(
        "neither `unshare -n` nor `unshare -rn` works here: the site must be built with the "
        "network cut off (on Ubuntu, allow user namespaces: "
        "sysctl kernel.apparmor_restrict_unprivileged_userns=0)"
    )


def owner_env(venv: Path, home: Path) -> dict[str, str]:
    """A new owner's shell: only the venv's scripts on PATH (no node, no npm), an empty
    HOME and no XDG cache override."""
    home.mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": str(venv / "bin"),
        "HOME": str(home),
        "NO_MKDOCS_2_WARNING": "1",
        "LANG": "C.UTF-8",
    }
    for tool in ("node", "npm"):
        if shutil.which(tool, path=env["PATH"]):
            raise CheckError(f"{tool} is on the venv's PATH {env['PATH']}")
    return env


def build_small_site(
    venv: Path, project: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """`mkdocs new` + Material + ``- docpilot`` in ``project``, built ``--strict`` with the
    venv's mkdocs, offline; checks the build took Pyodide from the package."""
    mkdocs = str(venv / "bin" / "mkdocs")
    run([mkdocs, "new", str(project)], env=env)
    (project / "mkdocs.yml").write_text(MKDOCS_YML, encoding="utf-8")
    (project / "docs" / "install.md").write_text(PAGE, encoding="utf-8")
    build = run([*network_off(), mkdocs, "build", "--strict"], cwd=project, env=env)
    if "Pyodide from package" not in build.stderr:
        raise CheckError(
            f"{project}: the build did not take Pyodide from the package:\n{build.stderr}"
        )
    missing = [name for name in SITE_FILES if not (project / "site" / name).is_file()]
    if missing:
        raise CheckError(f"{project}: the built site has no {', '.join(missing)}")
    return build


def check_artifact(artifact: Path, work: Path) -> str:
    """Install ``artifact`` + mkdocs-material into a fresh venv and build the small site."""
    venv = work / "venv"
    run([sys.executable, "-m", "venv", str(venv)])
    python = str(venv / "bin" / "python")
    run(
        [
            python,
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            str(artifact),
            "mkdocs-material",
        ]
    )
    build_small_site(venv, work / "project", owner_env(venv, work / "home"))
    return f"{artifact.name}: installed from the index, site built offline with no Node"


def artifacts(dist: Path, tag: str | None) -> list[Path]:
    """The one wheel and the one sdist in ``dist`` (of the version ``tag`` names)."""
    wheels = sorted(dist.glob("mkdocs_docpilot-*.whl"))
    sdists = sorted(dist.glob("mkdocs_docpilot-*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        raise CheckError(f"{dist} must hold one wheel and one sdist, found {wheels + sdists}")
    found = [wheels[0], sdists[0]]
    if tag is not None:
        version = tag.removeprefix("v")
        for path in found:
            named = re.match(r"mkdocs_docpilot-(.+?)(?:-py3-none-any\.whl|\.tar\.gz)$", path.name)
            if not named or named.group(1) != version:
                raise CheckError(f"{path.name} is not version {version} (tag {tag})")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("dist", type=Path, help="folder holding the wheel and the sdist")
    parser.add_argument("--tag", help="the release tag (vX.Y.Z) the distributions must match")
    args = parser.parse_args(argv)
    try:
        for artifact in artifacts(args.dist, args.tag):
            with tempfile.TemporaryDirectory(prefix="check-dist-") as work:
                print(check_artifact(artifact.resolve(), Path(work)), flush=True)
    except CheckError as exc:
        print(f"check_dist: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
