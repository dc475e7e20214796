"""The dev-set corpora built with plain `mkdocs build` (no DocPilot plugin: page URLs and
text come from MkDocs alone), once for every process of a session (shared_builds.py)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from corpora import EXAMPLE_SITE, MKDOCS_ENV, ROOT
from docpilot_runtime.bundle.schema import Bundle
from docpilot_runtime.index.build import index_site
from docpilot_runtime.settings.index import IndexOptions, embedder_spec
from shared_builds import SiteBuilds

DEVSETS_DIR = ROOT / "benchmarks" / "devsets"
CORPORA_DIR = ROOT / "benchmarks" / "corpora"


def devset_names() -> list[str]:
    """Every dev set beside benchmarks/devsets/devsets.py (a folder with its halves)."""
    return sorted(p.parent.name for p in DEVSETS_DIR.glob("*/tune.jsonl"))


def _example_site_config(work: Path) -> Path:
    # example-site's own config runs the DocPilot plugin (embedder, Pyodide runtime);
    # its pages and URLs come from MkDocs alone, so build them without it.
    config = yaml.safe_load((EXAMPLE_SITE / "mkdocs.yml").read_text(encoding="utf-8"))
    config["docs_dir"] = str(EXAMPLE_SITE / "docs")
    config["plugins"] = ["search"]
    path = work / "mkdocs.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


class BuiltSites:
    """Each dev-set corpus built when a test first asks for it, once for every process of
    the session (tests/shared_builds.py)."""

    def __init__(self, builds: SiteBuilds) -> None:
        self.builds = builds

    def __getitem__(self, name: str) -> Path:
        corpus = EXAMPLE_SITE if name == "example-site" else CORPORA_DIR / name

        def build(work: Path) -> subprocess.CompletedProcess[str]:
            if name == "example-site":
                config = _example_site_config(work)
            else:
                config = CORPORA_DIR / name / "mkdocs.yml"
            command = [sys.executable, "-m", "mkdocs", "build", "-q", "-f", str(config)]
            command += ["--site-dir", str(work / "site")]
            done = subprocess.run(
                command, cwd=config.parent, env=MKDOCS_ENV, text=True, capture_output=True
            )
            if done.returncode != 0:
                pytest.fail(f"mkdocs build of {config} failed:\n{done.stdout}{done.stderr}")
            return done

        return self.builds.get({"devset corpus": name}, build, inputs=[corpus]).site

    def indexed_copy(self, name: str, work: Path) -> tuple[Path, Bundle]:
        """The corpus's build copied into ``work`` (indexing writes its files into the
        site) and indexed lexical only: the copy and its bundle."""
        site = Path(shutil.copytree(self[name], work / "site", symlinks=True))
        options = IndexOptions(embedder=embedder_spec("none", "test"), cache_dir=str(work / "cache"))
        bundle = index_site(site, options).bundle
        assert bundle is not None, f"indexing {name} wrote no bundle"
        return site, bundle
