"""Owners on Zensical run `docpilot index site/` after `zensical build`: a real build
with the pinned Zensical release, then the real CLI, then the bundle and the pages."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from anchors import anchors_of, assert_units_land_on_real_anchors
from docpilot_runtime.bundle.read import load_bundle

ZENSICAL = Path(sys.executable).parent / "zensical"

PAGES = {
    "index.md": "# Home\n\nWelcome to the Zensical test site.\n\n## Install\n\nRun pip install it.\n",
    "guide/setup.md": (
        "# Setup\n\nIntro to the setup.\n\n## Edge cases & errors\n\nWhen the token expires, "
        "you get error E401.\n\n```python\nclient.refresh()\n```\n\n## Timeouts\n\n"
        "Requests give up after thirty seconds.\n"
    ),
}


def test_zensical_site_indexed_with_docpilot_index(tmp_path: Path) -> None:
    for name, text in PAGES.items():
        (tmp_path / "docs" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "docs" / name).write_text(text, encoding="utf-8")
    (tmp_path / "zensical.toml").write_text('[project]\nsite_name = "Zensical site"\n')
    built = subprocess.run(
        [str(ZENSICAL), "build"], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert built.returncode == 0, built.stdout + built.stderr
    site = tmp_path / "site"
    assert "Zensical" in (site / "index.html").read_text(encoding="utf-8")  # its generator tag

    settings = tmp_path / "docpilot.toml"
    settings.write_text(f'[index]\ncache_dir = "{tmp_path / "cache"}"\n', encoding="utf-8")
    indexed = subprocess.run(
        [sys.executable, "-m", "docpilot_runtime.cli", "index", str(site), "--config", str(settings)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert indexed.returncode == 0, indexed.stderr
    assert "units from 2 pages" in indexed.stdout and "widget added to 2 of 2 pages" in indexed.stdout

    assert_units_land_on_real_anchors(site)
    bundle = load_bundle(site)
    by_url = {u.url: u for u in bundle.units}
    assert "/guide/setup/#edge-cases-errors" in by_url  # Zensical's own anchor
    assert "edge-cases-errors" in anchors_of(site / "guide" / "setup" / "index.html")
    edge = by_url["/guide/setup/#edge-cases-errors"]
    assert edge.breadcrumb == ("Setup",) and "E401" in edge.text
    assert "```python\nclient.refresh()\n```" in edge.text
    assert bundle.embedder is not None and bundle.site_name == "Zensical site"

    page = (site / "guide" / "setup" / "index.html").read_text(encoding="utf-8")
    assert page.count('id="docpilot-config"') == 1
    assert 'src="../../docpilot/docpilot.js"' in page
    assert (site / "docpilot" / "docpilot.js").is_file()
