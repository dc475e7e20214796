"""Material's offline plugin builds a site to be opened from disk. Browsers refuse module
scripts, workers and downloads from file:// pages, so the widget cannot start there: the
build says so (a warning naming the plugin and the way out), and a page opened from disk
says it in the console instead of staying silent. Over HTTP the same build's widget works.
"""

from __future__ import annotations

from pathlib import Path

from browsing import file_server
from corpora import SiteFactory, mkdocs_build
from playwright.sync_api import ConsoleMessage, Page

PAGES = {"index.md": "# Storage\n\nThe embedding cache is kept in the user cache directory.\n"}


def offline_site(make_site: SiteFactory, **plugin: object) -> tuple[Path, str]:
    """An offline build; its site folder and the build's log."""
    config = make_site(PAGES, plugin={"embedder": "none", **plugin})
    config.write_text(config.read_text().replace("plugins:\n", "plugins:\n- offline\n", 1))
    done = mkdocs_build(config)
    return config.parent / "site", done.stdout + done.stderr


def test_an_offline_build_says_the_widget_needs_http_and_so_does_a_page_from_disk(
    page: Page, make_site: SiteFactory
) -> None:
    site, log = offline_site(make_site)
    assert "WARNING" in log and "offline plugin is on" in log and "widget: false" in log, log
    console: list[ConsoleMessage] = []
    page.on("console", lambda message: console.append(message))
    page.set_default_timeout(15_000)
    page.goto((site / "index.html").as_uri())
    page.locator("article h1").wait_for()
    page.wait_for_function("() => document.readyState === 'complete'")
    said = [m.text for m in console if m.type == "warning" and "DocPilot" in m.text]
    assert said and "served over HTTP" in said[0], [m.text for m in console]
    assert page.locator(".dp-launcher").count() == 0  # what the warning is about
    with file_server(site) as base:
        page.goto(f"{base}/index.html")
        page.locator(".dp-launcher").wait_for()  # served, the same build starts it
    assert not [m.text for m in console if m.type == "warning" and "DocPilot" in m.text][1:]


def test_an_offline_build_without_the_widget_has_nothing_to_say(make_site: SiteFactory) -> None:
    site, log = offline_site(make_site, widget=False)
    assert "offline plugin" not in log, log
    assert "DocPilot: the assistant needs" not in (site / "index.html").read_text(encoding="utf-8")
