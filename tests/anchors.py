"""Checks that a built bundle's units land on anchors that exist in the built pages."""

from __future__ import annotations

from pathlib import Path

from docpilot_runtime.bundle.read import load_bundle
from lxml import html as lxml_html


def anchors_of(page_file: Path) -> set[str]:
    tree = lxml_html.fromstring(page_file.read_bytes())
    return {str(i) for i in tree.xpath("//@id")}


def assert_units_land_on_real_anchors(site: Path) -> None:
    bundle = load_bundle(site)
    page_ids = {p.url: p.ids for p in bundle.pages}
    parsed: dict[Path, set[str]] = {}  # each built page parsed once, not once per unit
    assert bundle.units, "the bundle has no units"
    for unit in bundle.units:
        url, _, anchor = unit.url.partition("#")
        built = page_file(site, url)
        assert built.exists(), f"{unit.id}: no built page at {built}"
        if anchor:
            if built not in parsed:
                parsed[built] = anchors_of(built)
            assert anchor in parsed[built], f"{unit.id}: #{anchor} not in {built}"
            assert anchor in page_ids[url], f"{unit.id}: #{anchor} missing from the page set"
        assert unit.id == unit.url or unit.id.startswith(unit.url + "~")
    assert len({u.id for u in bundle.units}) == len(bundle.units), "unit ids are not unique"


def page_file(site: Path, url: str) -> Path:
    rel = url.lstrip("/")
    return site / (rel + "index.html" if rel == "" or rel.endswith("/") else rel)
