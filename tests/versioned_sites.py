"""A site published in two versions with a real `mike deploy`, shared by the version and
MCP tests (a module-scoped fixture: import it into the test module; the site itself is
published once for the session, tests/shared_builds.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml
from corpora import MKDOCS_ENV
from shared_builds import SiteBuilds

QUESTION = "Where is the embedding cache kept?"


@pytest.fixture(scope="module")
def versioned_site(site_builds: SiteBuilds) -> Path:
    """Versions 1.0 and 2.0 (alias latest, a redirect) deployed by mike, checked out of
    gh-pages (published once for every module and process of the session)."""
    return site_builds.get({"mike": [V1, V2]}, publish, site="published").site


def publish(work: Path) -> subprocess.CompletedProcess[str]:
    """The shared build: both versions, `latest` a redirect."""
    return deploy_versions(work, "redirect")


def deploy_versions(work: Path, alias_type: str | None) -> subprocess.CompletedProcess[str]:
    """Deploy versions 1.0 and 2.0 with mike from a git repository in ``work``, 2.0 with
    the alias ``latest`` of ``alias_type`` (None: mike's own default, a symlink in mike
    2.x), then check the gh-pages branch out into ``work/published`` (symlinks kept)."""
    alias = ["--alias-type", alias_type] if alias_type else []
    repo = work / "repo"
    repo.mkdir()
    config = {"site_name": "Versions", "theme": {"name": "mkdocs"},
              "plugins": [{"docpilot": {"cache_dir": str(work / "mike-cache")}}]}
    (repo / "mkdocs.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    (repo / "docs").mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "docs@example.com")
    git(repo, "config", "user.name", "Docs")
    output = []
    for version, text, extra in (("1.0", V1, []), ("2.0", V2, ["latest"])):
        (repo / "docs" / "index.md").write_text(text, encoding="utf-8")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"docs {version}")
        output.append(mike(repo, "deploy", *alias, version, *extra))
    archive = work / "gh-pages.tar"
    git(repo, "archive", "-o", str(archive), "gh-pages")
    with tarfile.open(archive) as tar:
        tar.extractall(work / "published", filter="data")
    return subprocess.CompletedProcess(["mike", "deploy"], 0, "".join(output), "")


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def mike(repo: Path, *args: str) -> str:
    """mike's own command (it runs `mkdocs build` from PATH: this interpreter's); its output."""
    scripts = Path(sys.executable).parent
    env = {**MKDOCS_ENV, "PATH": f"{scripts}{os.pathsep}{MKDOCS_ENV.get('PATH', '')}"}
    done = subprocess.run([str(scripts / "mike"), *args], cwd=repo, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


V1 = ("# Storage\n\nWhere DocPilot keeps its files.\n\n## Embedding cache\n\n"
      "Version one keeps the embedding cache in the project folder under .cache/docpilot, "
      "which mkdocs build --clean removes.\n")


V2 = ("# Storage\n\nWhere DocPilot keeps its files.\n\n## Embedding cache\n\n"
      "Version two keeps the embedding cache in the user cache directory under "
      "XDG_CACHE_HOME, which no clean build removes.\n")
