"""Pages that only list other pages are not cited: Material's blog index, archive and
category pages (once the posts' excerpts are left to the posts) and a hand-written section
index of links say nothing of their own, so they get no units and never appear among the
cited or the closest pages; a page with its own words next to its links keeps them."""

from __future__ import annotations

from corpora import SiteFactory, mkdocs_build
from docpilot_runtime.bundle.read import load_bundle


def post(title: str, day: str, category: str) -> str:
    """A blog post with its excerpt above the `more` marker."""
    return (f"---\ndate: {day}\ncategories: [{category}]\n---\n\n# {title}\n\n"
            f"What {title.lower()} changes, in a few words.\n\n<!-- more -->\n\nThe details.\n")


PAGES = {
    "index.md": "# Home\n\nWelcome to the handbook.\n",
    "blog/index.md": "# Blog\n",
    "blog/posts/first.md": post("Release 2", "2026-01-05", "Releases"),
    "blog/posts/second.md": post("Key rotation", "2025-11-07", "Security"),
    "guides/index.md": "# Guides\n\n- [Install](install.md)\n- [Configure](configure.md)\n",
    "guides/install.md": "# Install\n\nInstall the package with pip.\n",
    "guides/configure.md": (
        "# Configure\n\nSet the options in mkdocs.yml.\n\n## See also\n\n"
        "The [install guide](install.md) comes first, and takes a minute.\n"
    ),
}


def test_listing_pages_get_no_units(make_site: SiteFactory) -> None:
    config = make_site(PAGES, plugin={"embedder": "none"})
    config.write_text(config.read_text().replace("plugins:\n", "plugins:\n- blog\n", 1))
    mkdocs_build(config)
    bundle = load_bundle(config.parent / "site")
    with_units = {bundle.pages[u.page].url for u in bundle.units}
    listings = {"/blog/", "/blog/archive/2026/", "/blog/archive/2025/",
                "/blog/category/releases/", "/blog/category/security/", "/guides/"}
    assert listings <= {p.url for p in bundle.pages}, "still pages that links may point at"
    assert not listings & with_units, sorted(listings & with_units)
    assert {"/", "/guides/install/", "/guides/configure/"} <= with_units
    see_also = [u for u in bundle.units if u.url == "/guides/configure/#see-also"]
    assert see_also and "takes a minute" in see_also[0].text, "prose around a link stays"
