"""Shared fixtures: real sites built once per session with real `mkdocs build`."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from corpora import EXAMPLE_SITE, MATERIAL, SiteFactory, mkdocs_build, reduced_config


@pytest.fixture(scope="session", autouse=True)
def data_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The user's data folder for the session: turn records a runtime keeps by default
    (`records.location`) land in a temporary folder, not in the home of whoever runs the
    tests (subprocesses inherit it)."""
    folder = tmp_path_factory.mktemp("data-home")
    before = os.environ.get("XDG_DATA_HOME")
    os.environ["XDG_DATA_HOME"] = str(folder)
    yield folder
    if before is None:
        del os.environ["XDG_DATA_HOME"]
    else:
        os.environ["XDG_DATA_HOME"] = before


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
