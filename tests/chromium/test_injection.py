"""The plugin's side of the widget, read from real `mkdocs build` output (no browser):
the tags on every page, the files in site/docpilot/, the options and their errors."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from browsing import mkdocs_build

CONFIG_TAG = re.compile(
    r'<script id="docpilot-config" type="application/json">(.*?)</script>', re.S
)
PAGES = {"index.md": "# Home\n\nWelcome.\n", "guide/setup.md": "# Setup\n\n## Install\n\nRun it.\n"}


def build(make_site: Any, plugin: dict[str, Any] | None = None, **extra: Any) -> Path:
    config = make_site(PAGES, plugin, **extra)
    done = mkdocs_build(config)
    assert done.returncode == 0, done.stderr
    return config.parent / "site"


def widget_config(page: Path) -> dict[str, Any]:
    (data,) = CONFIG_TAG.findall(page.read_text(encoding="utf-8"))
    config: dict[str, Any] = json.loads(data)
    return config


def test_every_page_gets_the_widget_with_a_relative_path(make_site: Any) -> None:
    site = build(make_site)
    home = (site / "index.html").read_text(encoding="utf-8")
    nested = (site / "guide" / "setup" / "index.html").read_text(encoding="utf-8")

    assert '<script type="module" src="docpilot/docpilot.js"></script>\n</body>' in home
    assert '<script type="module" src="../../docpilot/docpilot.js"></script>\n</body>' in nested
    for name in ("docpilot.js", "docpilot.css", "worker.js", "bundle.msgpack"):
        assert (site / "docpilot" / name).is_file(), name
    assert list((site / "docpilot" / "pyodide").glob("*.wasm"))
    config = widget_config(site / "index.html")
    assert config["endpoint"] == "" and config["title"] == ""  # the strings' title, in the site's language
    assert config["strings"]["title"] == "Ask the docs"
    assert config["strings"]["send"] == "Send"
    # Written with a runtime too: the widget falls back to it when no runtime answers.
    assert (site / "docpilot" / "static.json").is_file()


def test_options_reach_the_widget_and_strings_follow_the_theme_language(make_site: Any) -> None:
    plugin = {
        "endpoint": "https://ask.example.com",
        "title": "Frag die Doku",
        "position": "bottom-left",
        "suggested_questions": ["Wie installiere ich es?"],
        "support_url": "mailto:docs@example.com",
        "history": True,
        "strings": {"launcher": "Frage"},
        "actions": [
            {
                "name": "open_upgrade",
                "description": "Upgrade",
                "parameters": {"type": "object", "properties": {}},
                "url": "https://example.com/upgrade",
            },
        ],
    }
    site = build(make_site, plugin, theme={"name": "material", "language": "de"})
    config = widget_config(site / "guide" / "setup" / "index.html")

    assert config["endpoint"] == "https://ask.example.com"
    assert config["position"] == "bottom-left"
    assert config["suggested_questions"] == ["Wie installiere ich es?"]
    assert config["history"] is True and config["language"] == "de"
    assert config["strings"]["send"] == "Senden"  # shipped German
    assert config["strings"]["launcher"] == "Frage"  # the owner's override
    assert config["actions"] == {"open_upgrade": "https://example.com/upgrade"}


def test_a_hostile_option_cannot_close_the_script_element(make_site: Any) -> None:
    site = build(make_site, {"title": "</script><script>alert(1)</script><!--"})
    html = (site / "index.html").read_text(encoding="utf-8")
    assert "<script>alert(1)" not in html
    assert widget_config(site / "index.html")["title"] == "</script><script>alert(1)</script><!--"


def test_widget_false_keeps_the_bundle_but_adds_nothing_to_pages(make_site: Any) -> None:
    site = build(make_site, {"widget": False})
    assert (site / "docpilot" / "bundle.msgpack").is_file()
    assert not (site / "docpilot" / "docpilot.js").exists()
    assert "docpilot-config" not in (site / "index.html").read_text(encoding="utf-8")


def test_static_mode_writes_the_static_index(make_site: Any) -> None:
    site = build(make_site, {"endpoint": "browser"})
    assert (site / "docpilot" / "static.json").is_file()
    assert widget_config(site / "index.html")["endpoint"] == "browser"


def test_bad_widget_options_stop_the_build_naming_the_key(make_site: Any) -> None:
    for plugin, named in [
        ({"endpoint": "ask.example.com"}, "'endpoint'"),
        ({"support_url": "javascript:alert(1)"}, "'support_url'"),
        ({"strings": {"sned": "Send"}}, "['sned'] under 'strings'"),
        ({"position": "top-left"}, "position"),
    ]:
        done = mkdocs_build(make_site(PAGES, plugin))
        assert done.returncode != 0, plugin
        assert named in done.stderr + done.stdout, (plugin, done.stderr)
