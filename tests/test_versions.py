"""Versioned sites published with mike: each version's build gets its own bundle in its
folder, named by version in that folder's manifest, and a reader on version 2 is
answered from version 2's pages, never from version 1's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

V1 = (
    "# Retries\n\n## Retrying requests\n\nSet `retries: 3` in the client section to retry "
    "a failed request up to three times, with a fixed pause of one second between tries.\n"
)
V2 = (
    "# Retries\n\n## Retrying requests\n\nVersion 2 replaced `retries` with `retry_policy`: "
    "set `retry_policy: exponential` to back off between tries, doubling the pause each time.\n"
)


def _git(repo: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def _mike(repo: Path, *args: str) -> None:
    bin_dir = str(Path(sys.executable).parent)  # mike runs `mkdocs` from PATH
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}",
        "NO_MKDOCS_2_WARNING": "1",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    done = subprocess.run(
        [str(Path(sys.executable).with_name("mike")), *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, f"mike {' '.join(args)}:\n{done.stdout}\n{done.stderr}"


def _ask(site: Path, question: str, page: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "docpilot_runtime.cli", "ask", str(site)],
        input=json.dumps({"question": question, "page": page}) + "\n",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[0])
    return result


@pytest.mark.timeout(600)
def test_mike_versions_get_their_own_bundles_and_answers(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    config = {
        "site_name": "Versions",
        "site_url": "https://docs.example/",
        "theme": {"name": "material"},
        "extra": {"version": {"provider": "mike"}},
        "plugins": [
            "search",
            {"docpilot": {"embedder": "none", "cache_dir": str(tmp_path / "cache")}},
        ],
    }
    (repo / "mkdocs.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    _git(repo, "init", "-q", "-b", "main")
    for version, text in (("1.0", V1), ("2.0", V2)):
        (repo / "docs" / "index.md").write_text(text, encoding="utf-8")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", f"docs {version}")
        _mike(repo, "deploy", version)
    # What GitHub Pages would serve: the gh-pages branch, checked out.
    served = tmp_path / "served"
    served.mkdir()
    archive = subprocess.run(
        ["git", "archive", "gh-pages"], cwd=repo, check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(served)], input=archive, check=True)
    assert json.loads((served / "versions.json").read_text())[0]["version"] == "2.0"
    manifests = {}
    for version in ("1.0", "2.0"):
        manifest = json.loads((served / version / "docpilot" / "manifest.json").read_text())
        (row,) = manifest["bundles"]
        manifests[version] = row
        assert (row["prefix"], row["version"], row["language"]) == ("/", version, "en")
        assert (served / version / row["bundle"]).is_file()
    assert not (served / "docpilot").exists(), "mike keeps every bundle in its version's folder"

    question = "How do I retry failed requests with a backoff?"
    words = {"1.0": "fixed pause of one second", "2.0": "doubling the pause"}
    for version, other in (("1.0", "2.0"), ("2.0", "1.0")):
        result = _ask(served, question, f"/{version}/")
        assert result["kind"] == "passages" and result["citations"], result
        assert result["bundle_hash"] == manifests[version]["sha256"]
        assert words[version] in result["markdown"] and words[other] not in result["markdown"]
    shutil.rmtree(repo)
