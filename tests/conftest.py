"""Shared fixtures: real sites built once per session with real `mkdocs build`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from corpora import EXAMPLE_SITE, MATERIAL, SiteFactory, mkdocs_build, reduced_config
from local_engine import local_model  # noqa: F401  (the real_model tests' engine)


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
