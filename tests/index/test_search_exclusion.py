"""Pages Material's search leaves out (`search: exclude: true` in their front matter, set
per page or for a folder by Material's meta plugin) are left out of the assistant too, by
`mkdocs build` and by a later `docpilot index` of the built site; a page's own `docpilot:
{exclude: false}` keeps it in."""

from __future__ import annotations

import json

from corpora import SiteFactory, mkdocs_build
from docpilot_runtime.api import index_built_site
from docpilot_runtime.bundle.read import load_bundle
from docpilot_runtime.settings.index import IndexOptions
from docpilot_runtime.settings.widget import WidgetOptions

HIDDEN = "---\nsearch:\n  exclude: true\n---\n# Staff notes\n\nThe rotation schedule for on-call staff.\n"
KEPT = (
    "---\nsearch:\n  exclude: true\ndocpilot:\n  exclude: false\n---\n"
    "# Glossary\n\nA bundle is the index file the build writes.\n"
)
PAGES = {
    "index.md": "# Home\n\nThe product overview.\n",
    "staff.md": HIDDEN,
    "glossary.md": KEPT,
}


def test_material_search_exclusion_keeps_a_page_out_of_the_assistant(
    make_site: SiteFactory,
) -> None:
    config = make_site(PAGES)
    site = config.parent / "site"
    mkdocs_build(config)
    searched = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))
    assert not any(d["location"].startswith("staff/") for d in searched["docs"]), "Material's"
    bundle = load_bundle(site)
    pages_with_units = {bundle.pages[u.page].url for u in bundle.units}
    assert "/staff/" not in pages_with_units
    assert "/glossary/" in pages_with_units, "docpilot: {exclude: false} wins"
    assert "/staff/" in {p.url for p in bundle.pages}, "still a page links may point at"

    # `docpilot index` of the built site (another pipeline step) honours it as well.
    index_built_site(site, IndexOptions(cache_dir=str(config.parent / "cache")),
                     WidgetOptions(widget=False))
    again = load_bundle(site)
    assert "/staff/" not in {again.pages[u.page].url for u in again.units}
