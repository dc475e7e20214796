"""`llms.txt` and `llms-full.txt` as real builds write them: every link lands on a built
page and an anchor in its HTML, nav order, excluded pages left out, a foreign file left
alone, and the option in mkdocs.yml and in the settings file's [index] table."""

from __future__ import annotations

import logging
import re
import shutil
from pathlib import Path
from urllib.parse import unquote

import pytest
from corpora import SiteFactory, mkdocs_build
from docpilot_runtime.bundle.read import load_bundle
from docpilot_runtime.index.build import index_site
from docpilot_runtime.index.llms_txt import render_agent_files, write_agent_files
from docpilot_runtime.settings.embedder import EmbedderSpec
from docpilot_runtime.settings.index import IndexOptions
from docpilot_runtime.settings.load import SettingsError, load_settings

LINK = re.compile(r"\]\(([^)\s]+)\)")
SOURCE = re.compile(r"^Source: (\S+)$", re.M)


def _html_ids(site: Path, path: str) -> set[str]:
    file = site / unquote(path).lstrip("/")
    if path.endswith("/") or not path:
        file = file / "index.html"
    html = file.read_text(encoding="utf-8")
    return set(re.findall(r'\bid="([^"]+)"', html))


def _unresolved(site: Path, urls: list[str]) -> list[str]:
    """Every url whose page is not built or whose anchor is not an id in that page."""
    bad = []
    ids: dict[str, set[str]] = {}  # each page read once, not once per link to it
    for url in urls:
        path, _, anchor = url.partition("#")
        if path == "/llms-full.txt":
            ok = (site / "llms-full.txt").is_file()
        else:
            try:
                if path not in ids:
                    ids[path] = _html_ids(site, path)
                ok = not anchor or unquote(anchor) in ids[path]
            except FileNotFoundError:
                ok = False
        if not ok:
            bad.append(url)
    return bad


def _check_site(site: Path) -> tuple[str, str]:
    outline = (site / "llms.txt").read_text(encoding="utf-8")
    full = (site / "llms-full.txt").read_text(encoding="utf-8")
    bundle = load_bundle(site)
    site_url = bundle.site.url.rstrip("/")

    def relative(url: str) -> str:
        assert url.startswith(site_url + "/"), url  # absolute under site_url when it is set
        return url[len(site_url) :]

    links = [relative(u) for u in LINK.findall(outline)]
    sources = [relative(u) for u in SOURCE.findall(full)]
    assert links and sources
    assert _unresolved(site, links) == []
    assert _unresolved(site, sources) == []
    # The same units as the bundle: every unit's section is in both files.
    unit_urls = {u.url for u in bundle.units}
    assert set(sources) == unit_urls
    section_links = {u.url for u in bundle.units if u.breadcrumb}
    assert section_links <= set(links)
    return outline, full


def test_example_site_llms_txt_follows_the_convention_and_every_link_resolves(
    example_site: Path,
) -> None:
    outline, full = _check_site(example_site)
    lines = outline.splitlines()
    assert lines[0] == "# DocPilot"
    assert lines[2].startswith("> ") and "MkDocs" in lines[2]
    assert "## Getting started" in lines and "## Reference" in lines
    base = load_bundle(example_site).site.url.rstrip("/")  # example-site sets site_url
    assert f"[llms-full.txt]({base}/llms-full.txt)" in outline
    assert full.startswith("# DocPilot\n\n> ")


def test_pages_come_in_nav_order_and_excluded_pages_are_left_out(example_site: Path) -> None:
    outline = (example_site / "llms.txt").read_text(encoding="utf-8")
    full = (example_site / "llms-full.txt").read_text(encoding="utf-8")
    base = load_bundle(example_site).site.url.rstrip("/")  # example-site sets site_url
    order = [
        outline.index("## Getting started"),
        outline.index(f"({base}/getting-started/installation/)"),
        outline.index(f"({base}/getting-started/quick-start/)"),
        outline.index("## Guides"),
        outline.index("## Concepts"),
        outline.index("## Reference"),
        outline.index(f"({base}/reference/cli/)"),
    ]
    assert order == sorted(order)
    # internal/release-checklist.md sets `docpilot: {exclude: true}` in its front matter.
    assert (example_site / "internal/release-checklist/index.html").exists()
    assert "/internal/release-checklist/" not in outline
    assert "Source: /internal/release-checklist/" not in full


def test_the_files_are_deterministic_and_a_foreign_llms_txt_is_left_alone(
    example_site: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    site = tmp_path / "site"
    shutil.copytree(example_site, site)
    bundle = load_bundle(site)
    first = render_agent_files(bundle, "DocPilot", "", [])
    assert first == render_agent_files(load_bundle(site), "DocPilot", "", [])
    # Our own files from an earlier run are ours to rewrite.
    written = write_agent_files(site, IndexOptions(site_name="DocPilot"))
    assert [p.name for p in written] == ["llms.txt", "llms-full.txt"]
    assert (site / "llms.txt").read_text(encoding="utf-8") == first.llms_txt

    theirs = "# Written by another plugin\n"
    (site / "llms.txt").write_text(theirs, encoding="utf-8")
    with caplog.at_level(logging.INFO):
        written = write_agent_files(site, IndexOptions(site_name="DocPilot"))
    assert (site / "llms.txt").read_text(encoding="utf-8") == theirs
    assert [p.name for p in written] == ["llms-full.txt"]
    notes = [r for r in caplog.records if "left as it is" in r.getMessage()]
    assert len(notes) == 1 and notes[0].levelno == logging.INFO
    assert "llms.txt" in notes[0].getMessage()


def test_site_url_makes_every_link_absolute(example_site: Path) -> None:
    files = render_agent_files(
        load_bundle(example_site), "", "https://docs.example.org/docpilot/", []
    )
    links = re.findall(r"\]\(([^)\s]+)\)", files.llms_txt)
    assert links and all(link.startswith("https://docs.example.org/docpilot/") for link in links)
    assert "Source: https://docs.example.org/docpilot/reference/cli/#" in files.llms_full_txt


def test_a_docs_file_named_llms_txt_wins_and_the_option_turns_the_files_off(
    make_site: SiteFactory,
) -> None:
    pages = {"index.md": "# Home\n\nWelcome to the site.\n\n## Setup\n\nRun the installer.\n"}
    own = "# Our own llms.txt\n"
    config = make_site({**pages, "llms.txt": own})
    mkdocs_build(config)
    site = config.parent / "site"
    assert (site / "llms.txt").read_text(encoding="utf-8") == own
    assert "Source: /#setup" in (site / "llms-full.txt").read_text(encoding="utf-8")

    config = make_site(pages, plugin={"llms_txt": False})
    (config.parent / "docs" / "llms.txt").unlink()
    mkdocs_build(config)
    assert (site / "docpilot" / "bundle.msgpack").exists()
    assert not (site / "llms.txt").exists() and not (site / "llms-full.txt").exists()


def test_the_settings_file_index_table_takes_llms_txt(tmp_path: Path) -> None:
    path = tmp_path / "docpilot.toml"
    path.write_text("[index]\nllms_txt = false\n", encoding="utf-8")
    assert load_settings(path).index.llms_txt is False
    assert load_settings(None).index.llms_txt is True
    path.write_text('[index]\nllms_txt = "yes"\n', encoding="utf-8")
    with pytest.raises(SettingsError, match="llms_txt"):
        load_settings(path)


@pytest.mark.slow
def test_material_corpus_llms_txt_links_all_resolve(material_site: Path) -> None:
    outline, _full = _check_site(material_site)
    assert outline.startswith("# Material for MkDocs\n")


def test_markdown_pages_writes_a_clean_copy_beside_each_indexed_page(
    make_site: SiteFactory,
) -> None:
    config = make_site(
        {
            "index.md": "# Home\n\nWelcome.\n",
            "guide.md": "# Guide\n\nIntro text.\n\n## Install\n\nRun:\n\n```bash\npip install it\n```\n\n### Offline\n\nCopy the wheel.\n",
            "secret.md": "---\ndocpilot:\n  exclude: true\n---\n# Secret\n\nHidden.\n",
        },
        plugin={"markdown_pages": True},
    )
    mkdocs_build(config)
    site = config.parent / "site"
    guide = (site / "guide" / "index.md").read_text(encoding="utf-8")
    assert guide == (
        "# Guide\n\nIntro text.\n\n## Install\n\nRun:\n\n```bash\npip install it\n```\n\n"
        "### Offline\n\nCopy the wheel.\n"
    )
    assert (site / "index.md").read_text(encoding="utf-8") == "# Home\n\nWelcome.\n"
    assert (site / "secret" / "index.html").exists() and not (site / "secret" / "index.md").exists()


def test_docpilot_index_writes_them_on_a_full_build_and_on_an_unchanged_rebuild(
    example_site: Path, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    shutil.copytree(example_site, site)
    for name in ("llms.txt", "llms-full.txt"):
        (site / name).unlink()
    options = IndexOptions(
        embedder=EmbedderSpec(name="none"), cache_dir=str(tmp_path / "cache"), site_name="DocPilot"
    )
    index_site(site, options)
    first = (site / "llms.txt").read_bytes(), (site / "llms-full.txt").read_bytes()
    (site / "llms.txt").unlink()  # as a clean MkDocs build would have removed it
    report = index_site(site, options)
    assert report.cached == report.units  # the unchanged rebuild restored the last bundle
    assert ((site / "llms.txt").read_bytes(), (site / "llms-full.txt").read_bytes()) == first
    _check_site(site)
