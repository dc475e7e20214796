"""Real sites to build in tests and benchmarks: example-site and the outside corpora.

The Material corpus's own mkdocs.yml uses plugins and hooks that are not installed
here, so it is built with a reduced configuration: its nav, theme material and the
common Markdown extensions, pages untouched.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_SITE = ROOT / "example-site"
SHARED = ROOT.parent / "shared"
MATERIAL = SHARED / "corpora" / "mkdocs-material"

REDUCED_EXTENSIONS: list[Any] = [
    "abbr",
    "admonition",
    "attr_list",
    "def_list",
    "footnotes",
    "md_in_html",
    {"toc": {"permalink": True}},
    "pymdownx.details",
    "pymdownx.superfences",
    "pymdownx.inlinehilite",
    {"pymdownx.highlight": {"anchor_linenums": True}},
    {"pymdownx.tabbed": {"alternate_style": True}},
    "pymdownx.keys",
    "pymdownx.mark",
    "pymdownx.tilde",
    "pymdownx.caret",
    {"pymdownx.tasklist": {"custom_checkbox": True}},
]


class _PermissiveLoader(yaml.SafeLoader):
    """Reads mkdocs.yml files that carry !!python/name and !ENV tags."""


def _ignore_tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> None:
    return None


_PermissiveLoader.add_multi_constructor("tag:yaml.org,2002:python/", _ignore_tag)
_PermissiveLoader.add_multi_constructor("!", _ignore_tag)


def _templates_named_in(docs: Path) -> set[str]:
    names = set()
    for page in docs.rglob("*.md"):
        head = page.read_text(encoding="utf-8").split("\n---", 1)[0]
        for line in head.splitlines():
            if line.startswith("template:"):
                names.add(line.split(":", 1)[1].strip().strip("'\""))
    return names


def reduced_config(corpus: Path, workdir: Path, plugin: dict[str, Any] | None = None) -> Path:
    """Write a buildable mkdocs.yml for ``corpus`` into ``workdir``; return its path."""
    overrides = workdir / "overrides"
    overrides.mkdir(parents=True, exist_ok=True)
    for name in _templates_named_in(corpus / "docs"):
        # Pages may name a template from the corpus's own theme overrides (not copied):
        # stand in for it with the plain page template.
        (overrides / name).write_text('{% extends "main.html" %}\n', encoding="utf-8")
    original = yaml.load((corpus / "mkdocs.yml").read_text(encoding="utf-8"), _PermissiveLoader)
    config = {
        "site_name": original.get("site_name", corpus.name),
        "site_url": original.get("site_url", ""),
        "docs_dir": str(corpus / "docs"),
        "site_dir": str(workdir / "site"),
        "theme": {"name": "material", "custom_dir": str(overrides)},
        "markdown_extensions": REDUCED_EXTENSIONS,
        "plugins": ["search", {"docpilot": plugin or {}}],
        "nav": original.get("nav"),
        "validation": {
            "nav": {"omitted_files": "ignore", "not_found": "ignore"},
            "links": {"not_found": "ignore", "anchors": "ignore", "unrecognized_links": "ignore"},
        },
    }
    path = workdir / "mkdocs.yml"
    workdir.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


MKDOCS_ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}


def mkdocs_build(config: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """Run a real `mkdocs build` in a subprocess; fail the test with its output."""
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-f", str(config), *extra],
        capture_output=True,
        text=True,
        env=MKDOCS_ENV,
        cwd=config.parent,
    )
    if result.returncode != 0:
        pytest.fail(f"mkdocs build of {config} failed:\n{result.stdout}\n{result.stderr}")
    return result


SiteFactory = Callable[..., Path]
