"""Multi-language sites (mkdocs-static-i18n, folder and suffix layouts): each language
gets its own bundle under its prefix, one manifest at the site root lists them, and a
German question on a German page is answered from German pages."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from corpora import mkdocs_build
from docpilot_runtime.bundle.read import load_bundle
from i18n_sites import _site, build_project_per_language


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


@pytest.mark.parametrize("layout", ["folder", "suffix"])
def test_each_language_gets_its_own_bundle_listed_in_one_manifest(
    tmp_path: Path, layout: str
) -> None:
    config = _site(tmp_path, layout)
    mkdocs_build(config)
    site = tmp_path / "site"
    english, german = load_bundle(site), load_bundle(site / "de")
    en_text = " ".join(u.text for u in english.units)
    de_text = " ".join(u.text for u in german.units)
    assert "Python 3.11 or newer" in en_text and "benötigt" not in en_text
    assert "benötigt" in de_text and "or newer" not in de_text
    assert {p.url for p in german.pages} == {"/", "/guide/"}, "urls relative to /de/"

    manifest = json.loads((site / "docpilot" / "manifest.json").read_text(encoding="utf-8"))
    rows = {row["prefix"]: row for row in manifest["bundles"]}
    assert set(rows) == {"/", "/de/"}
    assert (rows["/"]["language"], rows["/de/"]["language"]) == ("en", "de")
    for row in rows.values():
        assert row["sha256"] == hashlib.sha256((site / row["bundle"]).read_bytes()).hexdigest()

    de_page = (site / "de" / "index.html").read_text(encoding="utf-8")
    assert '"language":"de"' in de_page.replace(" ", "")
    assert '"language":"en"' in (site / "index.html").read_text(encoding="utf-8").replace(" ", "")

    result = _ask(site, "Welche Python-Version wird für den Bau benötigt?", "/de/")
    assert result["citations"], result
    assert all(c["title"] in {"Voraussetzungen", "Installation", "Zwischenspeicher", "Anleitung"}
               for c in result["citations"]), result["citations"]
    assert "benötigt" in result["markdown"]
    english_answer = _ask(site, "Which Python version is required?", "/")
    assert any(c["title"] == "Requirements" for c in english_answer["citations"])


def test_each_language_s_llms_txt_links_under_its_own_folder(tmp_path: Path) -> None:
    """With a site_url, /de/llms.txt links the German pages under /de/, and the root
    llms.txt links the German file by its absolute address."""
    config = _site(tmp_path, "folder")
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data["site_url"] = "https://docs.example.com/"
    config.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    mkdocs_build(config)
    site = tmp_path / "site"
    german = (site / "de" / "llms.txt").read_text(encoding="utf-8")
    links = re.findall(r"\]\((https?://[^)]+)\)", german)
    assert links and all(link.startswith("https://docs.example.com/de/") for link in links), links
    assert "https://docs.example.com/de/guide/#zwischenspeicher" in links
    root = (site / "llms.txt").read_text(encoding="utf-8")
    assert "](https://docs.example.com/de/llms.txt)" in root
    english = re.findall(r"\]\((https?://[^)]+)\)", root)
    assert not any("/de/" in link for link in english if not link.endswith("/de/llms.txt"))


def test_a_language_whose_index_is_empty_is_a_build_warning(tmp_path: Path) -> None:
    config = _site(tmp_path, "folder", plugin={"exclude": ["de/*"]})
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-f", str(config)],
        capture_output=True, text=True, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("WARNING")]
    assert any(
        "docpilot: the index of the 'de' pages is empty" in line and "2 of 2 pages" in line
        for line in warnings
    ), result.stderr
    # The English build does not call 'de/*' a pattern that matches nothing: it is meant
    # for the other language's build.
    assert not any("matches no page" in line for line in warnings), result.stderr




def test_one_project_per_language_with_extra_alternate(tmp_path: Path) -> None:
    """Each language's project writes its own manifest in its folder; the runtime serves
    both under their folders."""
    site = build_project_per_language(tmp_path)
    for lang in ("en", "de"):
        (row,) = json.loads((site / lang / "docpilot" / "manifest.json").read_text())["bundles"]
        assert (row["prefix"], row["language"]) == ("/", lang)
        page = (site / lang / "index.html").read_text(encoding="utf-8").replace(" ", "")
        assert f'"language":"{lang}"' in page
    german = _ask(site, "Welche Python-Version wird für den Bau benötigt?", "/de/")
    assert "benötigt" in german["markdown"] and "or newer" not in german["markdown"]
    english = _ask(site, "Which Python version is required?", "/en/")
    assert any(c["title"] == "Requirements" for c in english["citations"]), english
