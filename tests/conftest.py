"""Shared fixtures: real sites built once per session with real `mkdocs build`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from corpora import (
    EXAMPLE_SITE,
    MATERIAL,
    MKDOCS_ENV,
    ROOT,
    SiteFactory,
    mkdocs_build,
    reduced_config,
)

DEVSETS_DIR = ROOT / "benchmarks" / "devsets"
CORPORA_DIR = ROOT / "benchmarks" / "corpora"


@pytest.fixture
def make_site(tmp_path: Path) -> SiteFactory:
    """Write a small MkDocs project (pages: path -> Markdown) and return its mkdocs.yml."""

    def make(pages: dict[str, str], plugin: dict[str, Any] | None = None, **extra: Any) -> Path:
        docs = tmp_path / "docs"
        for name, text in pages.items():
            path = docs / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        config = {
            "site_name": "Test site",
            "theme": {"name": "material"},
            "markdown_extensions": [
                {"toc": {"permalink": True}},
                "admonition",
                "pymdownx.superfences",
                {"pymdownx.tabbed": {"alternate_style": True}},
                {"pymdownx.highlight": {"pygments_lang_class": True}},
                "tables",
            ],
            "plugins": [
                "search",
                {"docpilot": {"cache_dir": str(tmp_path / "cache"), **(plugin or {})}},
            ],
            **extra,
        }
        path = tmp_path / "mkdocs.yml"
        path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        return path

    return make


@pytest.fixture(scope="session")
def example_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """example-site built once per session into a temporary site dir."""
    site = tmp_path_factory.mktemp("example") / "site"
    mkdocs_build(EXAMPLE_SITE / "mkdocs.yml", "--site-dir", str(site))
    return site


@pytest.fixture(scope="session")
def material_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Material for MkDocs corpus built once per session through the plugin."""
    work = tmp_path_factory.mktemp("material")
    config = reduced_config(MATERIAL, work, {"cache_dir": str(work / "cache")})
    mkdocs_build(config)
    return work / "site"


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


@pytest.fixture(scope="session")
def built_sites(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every dev-set corpus built once by `mkdocs build` without the plugin, by set name
    (the builds run side by side)."""
    sites, builds = {}, []
    for name in devset_names():
        work = tmp_path_factory.mktemp(f"devset-{name}")
        if name == "example-site":
            config = _example_site_config(work)
        else:
            config = CORPORA_DIR / name / "mkdocs.yml"
        sites[name] = work / "site"
        command = [sys.executable, "-m", "mkdocs", "build", "-q", "-f", str(config)]
        command += ["--site-dir", str(sites[name])]
        builds.append(
            (
                config,
                subprocess.Popen(
                    command,
                    cwd=config.parent,
                    env=MKDOCS_ENV,
                    text=True,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                ),
            )
        )
    for config, build in builds:
        output, _ = build.communicate()
        if build.returncode != 0:
            pytest.fail(f"mkdocs build of {config} failed:\n{output}")
    return sites
