"""A page's own ids never clash with the widget's: a page titled "DocPilot" (Python-Markdown
gives its H1 `id="docpilot"`, the id of the widget's root) keeps the theme's heading size
and prints, and a heading "DocPilot config" (`id="docpilot-config"`, the id of the block
the build writes the widget's options into) does not stand in for those options."""

from __future__ import annotations

from corpora import SiteFactory, mkdocs_build
from docpilot_runtime.serve.app import create_app
from docpilot_runtime.settings.load import Settings
from playwright.sync_api import Page
from servers.runtime import serve_app

H1_STYLE = "(h) => { const s = getComputedStyle(h); return [s.fontSize, s.fontWeight, s.display]; }"


def test_a_page_titled_docpilot_keeps_its_heading_and_the_widget_its_options(
    page: Page, make_site: SiteFactory
) -> None:
    config = make_site(
        {
            "index.md": "# DocPilot\n\nDocPilot answers readers.\n\n"
                        "## DocPilot config\n\nThe options live in mkdocs.yml.\n",
            "other.md": "# Other\n\nAnother page.\n",
        },
        plugin={"title": "Ask the handbook"},
    )
    mkdocs_build(config)
    site = config.parent / "site"
    html = (site / "index.html").read_text(encoding="utf-8")
    assert 'id="docpilot"' in html and 'id="docpilot-config"' in html  # the clash is real
    page.set_default_timeout(15_000)
    with serve_app(create_app(site, Settings())) as running:
        page.goto(f"{running.base_url}/other/")
        page.locator(".dp-launcher").wait_for()
        plain = page.locator("article h1").evaluate(H1_STYLE)
        page.goto(f"{running.base_url}/")
        page.locator(".dp-launcher").wait_for()
        h1 = page.locator("article h1#docpilot")
        assert h1.evaluate(H1_STYLE) == plain
        page.emulate_media(media="print")
        assert h1.is_visible(), "the widget's print rule hides only the widget"
        page.emulate_media(media="screen")
        page.locator(".dp-launcher").click()
        page.locator("#dp-panel").wait_for(state="visible")
        assert page.locator(".dp-title").inner_text() == "Ask the handbook"
