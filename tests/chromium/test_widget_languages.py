"""The widget speaks the page's language: the strings follow the site's `<html lang>`
(Material's `theme.language`), from one table per language in widget/i18n/."""

from __future__ import annotations

import functools
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browsing import ANSWER_TIMEOUT_MS, mkdocs_build, with_widget_config
from docpilot_runtime.serve.app import create_app
from docpilot_runtime.shared.framing import FRAMINGS
from playwright.sync_api import Page, expect
from servers.runtime import serve_app

I18N = Path(__file__).resolve().parents[2] / "widget" / "i18n"
LANGUAGES = ("en", "de", "fr", "es", "pt", "it", "ja", "zh", "ko", "hi")


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def japanese_site(make_site: Any) -> Iterator[str]:
    """A small site built with `theme.language: ja`, on a plain file server."""
    config = make_site(
        {"index.md": "# ホーム\n\nようこそ。\n"}, {}, theme={"name": "material", "language": "ja"}
    )
    done = mkdocs_build(config)
    assert done.returncode == 0, done.stderr
    handler = functools.partial(Quiet, directory=str(config.parent / "site"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def japanese_runtime(make_site: Any) -> Iterator[str]:
    """A Japanese-language site built for static mode (`endpoint: browser`), served by the
    real runtime, so one build answers both ways (a test can point the widget at /api)."""
    pages = {
        "index.md": "# Install\n\nInstall the package with pip, then add the plugin to "
        "mkdocs.yml.\n\n## Requirements\n\nPython 3.11 or newer is required.\n",
        "guide.md": "# Guide\n\n## Caching\n\nThe embedding cache keeps vectors between builds.\n",
    }
    config = make_site(pages, {"endpoint": "browser"}, theme={"name": "material", "language": "ja"})
    done = mkdocs_build(config)
    assert done.returncode == 0, done.stderr
    with serve_app(create_app(config.parent / "site")) as running:
        yield running.base_url + "/"


@pytest.mark.parametrize("mode", ["server", "static"])
def test_a_japanese_page_gets_japanese_framing(
    page: Page, japanese_runtime: str, mode: str
) -> None:
    if mode == "server":
        with_widget_config(page, "/", lambda config: config.update(endpoint=""))
    asks: list[Any] = []
    page.on(
        "request", lambda r: asks.append(r.post_data_json) if r.url.endswith("/api/ask") else None
    )
    page.goto(japanese_runtime)
    page.locator(".dp-launcher").click()
    page.locator(".dp-input").fill("How do I install the package with pip?")
    page.locator(".dp-input").press("Enter")
    body = page.locator(".dp-body[data-kind]").first
    body.wait_for(timeout=ANSWER_TIMEOUT_MS)
    assert body.get_attribute("data-kind") == "passages"
    expect(body.locator(":scope > p").first).to_have_text(FRAMINGS["ja"].passages)
    if mode == "server":
        assert [a["lang"] for a in asks] == ["ja"]
    else:
        assert asks == []  # static mode: nothing leaves the page


def test_every_language_table_has_every_string() -> None:
    english = json.loads((I18N / "en.json").read_text(encoding="utf-8"))
    for language in LANGUAGES:
        table = json.loads((I18N / f"{language}.json").read_text(encoding="utf-8"))
        assert set(table) == set(english), language
        assert "{limit}" in table["too_long"], language


def test_a_japanese_page_gets_japanese_strings(page: Page, japanese_site: str) -> None:
    page.goto(japanese_site)
    expect(page.locator("html")).to_have_attribute("lang", "ja")
    launcher = page.locator(".dp-launcher")
    expect(launcher).to_have_text("質問")
    launcher.click()
    panel = page.locator("#dp-panel")
    ja = json.loads((I18N / "ja.json").read_text(encoding="utf-8"))
    # The owner set neither title nor placeholder: the strings' own, in Japanese.
    expect(panel.locator(".dp-title")).to_have_text(ja["title"])
    expect(panel.locator(".dp-input")).to_have_attribute("placeholder", ja["placeholder"])
    expect(panel.get_by_role("button", name="閉じる")).to_be_visible()
    expect(panel.get_by_role("button", name="送信")).to_be_visible()
    expect(panel).to_contain_text("質問にパスワードやキーを貼り付けないでください。")
    # No runtime on this file server: the widget says, in Japanese, that it answers here.
    expect(panel.locator(".dp-notice")).to_have_text(ja["static_fallback"])
    page.keyboard.press("Escape")
    expect(panel).to_be_hidden()
