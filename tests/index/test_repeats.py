"""Text repeated across pages is indexed once: a blog post's excerpt on the post's own
page, any other long block on the first page in nav order that carries it."""

from __future__ import annotations

from corpora import SiteFactory, mkdocs_build
from docpilot_runtime.bundle.read import load_bundle
from docpilot_runtime.index.repeats import MIN_REPEAT_CHARS, index_repeats_once, text_blocks
from docpilot_runtime.index.units import Unit

EXCERPT = (
    "Our release brings incremental rebuilds to the indexer, so that editing one page of a "
    "large handbook only re-embeds the sections that really changed."
)
POST_BODY = "The rest of the post explains how the content hashes are kept between builds."


def _post(slug: str, date: str, category: str) -> str:
    return (
        f"---\ndate: {date}\ncategories:\n  - {category}\n---\n\n# Post {slug}\n\n"
        f"{EXCERPT} ({slug})\n\n<!-- more -->\n\n## Details\n\n{POST_BODY}\n"
    )


def test_blog_excerpts_are_indexed_once_on_the_post_itself(make_site: SiteFactory) -> None:
    pages = {
        "index.md": "# Home\n\nWelcome to the handbook.\n",
        "blog/index.md": "# Blog\n",
        "blog/posts/first.md": _post("first", "2026-01-05", "Releases"),
        "blog/posts/second.md": _post("second", "2026-02-07", "Releases"),
    }
    config = make_site(pages, plugin={"embedder": "none"})
    text = config.read_text().replace("plugins:\n", "plugins:\n- blog\n", 1)
    config.write_text(text, encoding="utf-8")
    site = config.parent / "site"
    mkdocs_build(config)
    # The blog plugin wrote its index, archive and category pages with both excerpts.
    assert EXCERPT in (site / "blog" / "index.html").read_text(encoding="utf-8")
    assert (site / "blog" / "archive" / "2026" / "index.html").is_file()
    assert (site / "blog" / "category" / "releases" / "index.html").is_file()
    bundle = load_bundle(site)
    for slug in ("first", "second"):
        carrying = [u for u in bundle.units if f"{EXCERPT} ({slug})" in u.text]
        assert len(carrying) == 1, [u.id for u in carrying]
        day = "2026/01/05" if slug == "first" else "2026/02/07"
        assert carrying[0].url.startswith(f"/blog/{day}/post-{slug}/")
    listings = [u for u in bundle.units if u.url.startswith(("/blog/archive/", "/blog/category/"))]
    assert not any("incremental rebuilds" in u.text for u in listings), "listing pages add none"


SHARED = (
    "Support hours: the team answers tickets on working days from nine to five, Central "
    "European Time. Urgent outages are handled around the clock through the status page, "
    "and every answer links back to the ticket so the history stays in one place."
)


def test_long_block_repeated_across_pages_is_indexed_on_the_first_nav_page(
    make_site: SiteFactory,
) -> None:
    assert len(SHARED) >= MIN_REPEAT_CHARS
    short = "See the FAQ for more."
    pages = {
        "a.md": f"# Alpha\n\nAlpha's own text.\n\n{SHARED}\n\n{short}\n",
        "b.md": f"# Beta\n\nBeta's own text.\n\n## Support\n\n{SHARED}\n\n{short}\n",
        "c.md": f"# Gamma\n\n## Help\n\n{SHARED}\n",
    }
    config = make_site(
        pages, plugin={"embedder": "none"}, nav=[{"Beta": "b.md"}, {"Alpha": "a.md"}, {"Gamma": "c.md"}]
    )
    mkdocs_build(config)
    units = load_bundle(config.parent / "site").units
    carrying = [u.url for u in units if SHARED in u.text]
    assert carrying == ["/b/#support"], "the first page in nav order keeps it"
    alpha = [u for u in units if u.url.startswith("/a/")]
    assert alpha and "Alpha's own text." in alpha[0].text and short in alpha[0].text
    assert sum(short in u.text for u in units) == 2, "short repeats stay on every page"
    assert not any(u.url.startswith("/c/#help") for u in units), "a unit left empty is dropped"


def test_code_fences_are_one_block_even_with_blank_lines() -> None:
    code = "```python\nfirst()\n\nsecond()\n```"
    assert text_blocks(f"Intro.\n\n{code}\n\nOutro.") == ["Intro.", code, "Outro."]


def test_pages_outside_the_nav_come_after_it() -> None:
    block = "x" * MIN_REPEAT_CHARS
    units = [
        Unit("/orphan/", "/orphan/", "Orphan", (), block, 0),
        Unit("/listed/", "/listed/", "Listed", (), f"Own text.\n\n{block}", 1),
    ]
    kept = index_repeats_once(units, {"/listed/": 0})
    assert [(u.id, u.text) for u in kept] == [("/listed/", f"Own text.\n\n{block}")]
