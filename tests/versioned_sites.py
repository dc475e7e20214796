"""A site published in two versions with a real `mike deploy`, shared by the version and
MCP tests (a module-scoped fixture: import it into the test module)."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml
from corpora import MKDOCS_ENV

QUESTION = "Where is the embedding cache kept?"


@pytest.fixture(scope="module")
def versioned_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Versions 1.0 and 2.0 (alias latest, a redirect) deployed by mike, checked out of
    gh-pages."""
    return deploy_versions(tmp_path_factory.mktemp("mike"), "redirect")


def deploy_versions(root: Path, alias_type: str | None) -> Path:
    """Versions 1.0 and 2.0 deployed by mike from a repository in ``root``, 2.0 with the
    alias ``latest`` of ``alias_type`` (None: mike's own default, a symlink in mike 2.x),
    published as gh-pages checks out (symlinks kept): returns ``root/published``."""
    alias = ["--alias-type", alias_type] if alias_type else []
    repo = root / "repo"
    repo.mkdir()
    config = {"site_name": "Versions", "theme": {"name": "mkdocs"},
              "plugins": [{"docpilot": {"cache_dir": str(repo.parent / "mike-cache")}}]}
    (repo / "mkdocs.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    (repo / "docs").mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "docs@example.com")
    git(repo, "config", "user.name", "Docs")
    for version, text, extra in (("1.0", V1, []), ("2.0", V2, ["latest"])):
        (repo / "docs" / "index.md").write_text(text, encoding="utf-8")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"docs {version}")
        mike(repo, "deploy", *alias, version, *extra)
    archive = repo.parent / "gh-pages.tar"
    git(repo, "archive", "-o", str(archive), "gh-pages")
    out = repo.parent / "published"
    with tarfile.open(archive) as tar:
        tar.extractall(out, filter="data")
    return out


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def mike(repo: Path, *args: str) -> None:
    """mike's own command (it runs `mkdocs build` from PATH: this interpreter's)."""
    scripts = Path(sys.executable).parent
    env = {**MKDOCS_ENV, "PATH": f"{scripts}{os.pathsep}{MKDOCS_ENV.get('PATH', '')}"}
    done = subprocess.run([str(scripts / "mike"), *args], cwd=repo, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


V1 = ("# Storage\n\nWhere DocPilot keeps its files.\n\n## Embedding cache\n\n"
      "Version one keeps the embedding cache in the project folder under .cache/docpilot, "
      "which mkdocs build --clean removes.\n")


V2 = ("# Storage\n\nWhere DocPilot keeps its files.\n\n## Embedding cache\n\n"
      "Version two keeps the embedding cache in the user cache directory under "
      "XDG_CACHE_HOME, which no clean build removes.\n")
