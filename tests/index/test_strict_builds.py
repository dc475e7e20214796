"""`mkdocs build --strict` passes unless something is truly misconfigured: the plugin's
notes about single pages are info-level, and every message it logs starts with
``docpilot:`` and names the Markdown source, not the built HTML."""

from __future__ import annotations

import re
from pathlib import Path

from corpora import EXAMPLE_SITE, MATERIAL, SiteFactory, mkdocs_build, reduced_config

NOTE_PAGES = {
    "index.md": "# Welcome\n\nThe product overview.\n",
    "section/index.md": "# Section\n",  # a title-only index page
    "empty.md": "",
    "pictures.md": (
        "# Pictures\n\nA gallery.\n\n## ![diagram](diagram.png)\n\nThe diagram shows the flow.\n"
    ),
}


def _plugin_lines(log: str) -> list[str]:
    return [line for line in log.splitlines() if "docpilot" in line.lower()]


def test_per_page_notes_are_info_named_by_source_and_strict_passes(
    make_site: SiteFactory,
) -> None:
    config = make_site(NOTE_PAGES)
    (config.parent / "docs" / "diagram.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    result = mkdocs_build(config, "--strict")
    lines = _plugin_lines(result.stderr)
    assert not [line for line in lines if line.startswith("WARNING")], result.stderr
    notes = [line for line in lines if line.startswith("INFO") and "docs/" in line]
    named = " ".join(notes)
    assert "docs/empty.md" in named and "docs/section/index.md" in named, result.stderr
    assert "docs/pictures.md" in named and "heading(s) with no text" in named, result.stderr
    assert "site/" not in named and ".html" not in named
    for line in lines:
        assert re.match(r"(INFO|WARNING|ERROR)\s+-\s+docpilot: ", line), line


def test_strict_build_of_example_site_passes(tmp_path: Path) -> None:
    result = mkdocs_build(EXAMPLE_SITE / "mkdocs.yml", "--strict", "--site-dir", str(tmp_path))
    assert "units from" in result.stderr
    assert (tmp_path / "docpilot" / "bundle.msgpack").is_file()


def test_material_corpus_build_logs_no_docpilot_warning(tmp_path: Path) -> None:
    config = reduced_config(MATERIAL, tmp_path, {"cache_dir": str(tmp_path / "cache")})
    result = mkdocs_build(config, "--strict")
    lines = _plugin_lines(result.stderr)
    assert not [line for line in lines if not line.startswith("INFO")], "\n".join(lines)
    assert any("docpilot: " in line and "units from" in line for line in lines)
