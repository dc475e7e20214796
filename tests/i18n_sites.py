"""Two-language MkDocs projects (mkdocs-static-i18n, folder and suffix layouts) for the
language, version and MCP tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from corpora import mkdocs_build

EN = {
    "index": "# Installation\n\nInstall the package with pip and add the plugin to mkdocs.yml.\n\n"
    "## Requirements\n\nPython 3.11 or newer is required to build the site.\n",
    "guide": "# Guide\n\n## Caching\n\nThe embedding cache keeps vectors between builds.\n",
}


DE = {
    "index": "# Installation\n\nInstallieren Sie das Paket mit pip und tragen Sie das Plugin in "
    "mkdocs.yml ein.\n\n## Voraussetzungen\n\nFür den Bau der Seite wird Python 3.11 oder "
    "neuer benötigt.\n",
    "guide": "# Anleitung\n\n## Zwischenspeicher\n\nDer Zwischenspeicher behält die Vektoren "
    "zwischen zwei Builds.\n",
}


def _site(tmp_path: Path, layout: str, plugin: dict[str, Any] | None = None) -> Path:
    docs = tmp_path / "docs"
    for lang, pages in (("en", EN), ("de", DE)):
        for name, text in pages.items():
            rel = f"{lang}/{name}.md" if layout == "folder" else (
                f"{name}.md" if lang == "en" else f"{name}.{lang}.md"
            )
            (docs / rel).parent.mkdir(parents=True, exist_ok=True)
            (docs / rel).write_text(text, encoding="utf-8")
    config = {
        "site_name": "Languages",
        "theme": {"name": "material"},
        "plugins": [
            "search",
            {
                "i18n": {
                    "docs_structure": layout,
                    "languages": [
                        {"locale": "en", "default": True, "name": "English"},
                        {"locale": "de", "name": "Deutsch"},
                    ],
                }
            },
            {"docpilot": {"cache_dir": str(tmp_path / "cache"), **(plugin or {})}},
        ],
    }
    path = tmp_path / "mkdocs.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def build_project_per_language(tmp_path: Path, site_url: str = "") -> Path:
    """Material's other multi-language layout: one MkDocs project per language, each
    built into its own folder of one site (``site_url`` + the language's folder, when
    given), linked by ``extra.alternate``; the built site."""
    alternate = [
        {"name": "English", "link": "/en/", "lang": "en"},
        {"name": "Deutsch", "link": "/de/", "lang": "de"},
    ]
    site = tmp_path / "site"
    for lang, pages in (("en", EN), ("de", DE)):
        project = tmp_path / lang
        for name, text in pages.items():
            (project / "docs" / f"{name}.md").parent.mkdir(parents=True, exist_ok=True)
            (project / "docs" / f"{name}.md").write_text(text, encoding="utf-8")
        config = {
            "site_name": "Languages",
            **({"site_url": f"{site_url}{lang}/"} if site_url else {}),
            "site_dir": str(site / lang),
            "theme": {"name": "material", "language": lang},
            "extra": {"alternate": alternate},
            "plugins": ["search", {"docpilot": {"cache_dir": str(tmp_path / "cache")}}],
        }
        path = project / "mkdocs.yml"
        path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        mkdocs_build(path)
    return site
