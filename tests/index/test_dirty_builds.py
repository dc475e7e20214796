"""`mkdocs build --dirty` (and `mkdocs serve --dirty`): MkDocs rebuilds only the edited
pages, but the bundle must still cover the whole site and the embedding cache keep
every unit, so the next full build embeds nothing."""

from __future__ import annotations

import re

from corpora import SiteFactory, mkdocs_build
from docpilot_runtime.bundle.read import load_bundle

PAGES = {
    "index.md": "# Welcome\n\nThe product overview. It explains the widget.\n\n## Install\n\npip install it.\n",
    "guide.md": (
        "# Guide\n\nIntro to the guide.\n\n## Errors\n\nWhen the token expires, you get error "
        "E401.\n\n## Retries\n\nThe client retries three times with a backoff.\n"
    ),
    "reference/options.md": "# Options\n\n## timeout\n\nSeconds before a request gives up.\n",
    "secret.md": "---\ndocpilot:\n  exclude: true\n---\n# Internal\n\nRelease checklist for staff.\n",
}


def _counts(build_log: str) -> tuple[int, int, int, int]:
    found = re.search(
        r"(\d+) units from (\d+) pages.*?\((\d+) embedded, (\d+) cached\)", build_log
    )
    assert found, f"no DocPilot summary in the build log:\n{build_log}"
    units, pages, embedded, cached = (int(g) for g in found.groups())
    return units, pages, embedded, cached


def test_dirty_build_after_one_edit_keeps_every_page_and_embeds_only_the_edit(
    make_site: SiteFactory,
) -> None:
    config = make_site(PAGES)
    site = config.parent / "site"
    units, pages, _, _ = _counts(mkdocs_build(config).stderr)
    full = load_bundle(site)
    assert pages == len(full.pages) == 4 and units == len(full.units) > 5

    guide = config.parent / "docs" / "guide.md"
    guide.write_text(guide.read_text().replace("error E401", "error E403"), encoding="utf-8")
    dirty_units, dirty_pages, embedded, cached = _counts(mkdocs_build(config, "--dirty").stderr)
    dirty = load_bundle(site)
    assert (dirty_pages, dirty_units) == (pages, units)
    assert [p.url for p in dirty.pages] == [p.url for p in full.pages]
    assert [u.id for u in dirty.units] == [u.id for u in full.units]
    assert (embedded, cached) == (1, units - 1), "only the edited section is embedded"
    assert any("E403" in u.text for u in dirty.units)
    assert not any(u.url.startswith("/secret/") for u in dirty.units), "exclusion survives"

    # The dirty build kept the whole cache: a full build now embeds nothing.
    again_units, again_pages, embedded, cached = _counts(mkdocs_build(config).stderr)
    assert (again_units, again_pages, embedded, cached) == (units, pages, 0, units)


def test_dirty_build_with_nothing_edited_restores_the_same_bundle(make_site: SiteFactory) -> None:
    config = make_site(PAGES)
    site = config.parent / "site"
    mkdocs_build(config)
    before = (site / "docpilot" / "bundle.msgpack").read_bytes()
    units, pages, embedded, _ = _counts(mkdocs_build(config, "--dirty").stderr)
    assert (site / "docpilot" / "bundle.msgpack").read_bytes() == before
    assert (pages, embedded) == (4, 0) and units > 5

