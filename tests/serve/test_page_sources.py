"""The page policy follows what the built pages load: a real Material build with Google
Analytics, Material's feedback widget, a GitHub repository link, an external badge and an
embedded video, served by the runtime over HTTP. Pages get those origins; the widget's
files and the API keep DocPilot's strict policies; with `allow_page_sources = false` the
start-up log names what the fixed policy blocks, and on which page."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest
import yaml
from corpora import mkdocs_build
from docpilot_runtime.serve.app import create_app
from docpilot_runtime.serve.page_sources import PageSources, allows, parse_policy, scan_page
from docpilot_runtime.serve.security_headers import API_POLICY
from docpilot_runtime.settings.headers import HeaderSettings
from docpilot_runtime.settings.load import Settings, load_settings
from servers.runtime import serve_app

BADGE = "https://img.shields.io/badge/build-passing-green"
VIDEO = "https://www.youtube-nocookie.com/embed/abc123"
PAGES = {
    "index.md": (
        f"# Storage\n\n![build]({BADGE})\n\n"
        f'<iframe src="{VIDEO}" title="intro"></iframe>\n\n'
        "## Embedding cache\n\nThe embedding cache is kept in the user cache directory.\n"
    ),
    "guide.md": "# Guide\n\nHow to write pages.\n",
}
MATERIAL_EXTRAS = {
    "repo_url": "https://github.com/example/docs",
    "extra": {
        "analytics": {
            "provider": "google",
            "property": "G-ABCDEF1234",
            "feedback": {"title": "Was this page helpful?", "ratings": [
                {"icon": "material/thumb-up-outline", "name": "Yes", "data": 1, "note": "Thanks"},
                {"icon": "material/thumb-down-outline", "name": "No", "data": 0, "note": "Sorry"},
            ]},
        }
    },
}


@pytest.fixture(scope="module")
def analytics_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The pages built with Material, Google Analytics and its feedback widget."""
    work = tmp_path_factory.mktemp("analytics")
    for name, text in PAGES.items():
        (work / "docs").mkdir(exist_ok=True)
        (work / "docs" / name).write_text(text, encoding="utf-8")
    config = {
        "site_name": "Analytics",
        "theme": {"name": "material"},
        "plugins": ["search", {"docpilot": {"cache_dir": str(work / "cache")}}],
        **MATERIAL_EXTRAS,
    }
    (work / "mkdocs.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    mkdocs_build(work / "mkdocs.yml")
    return work / "site"


def directives(policy: str) -> dict[str, list[str]]:
    return parse_policy(policy)


def test_pages_allow_what_they_load_and_docpilot_s_own_paths_stay_strict(
    analytics_site: Path,
) -> None:
    with serve_app(create_app(analytics_site, Settings())) as running, httpx.Client(
        base_url=running.base_url
    ) as client:
        page = client.get("/").headers["content-security-policy"]
        guide = client.get("/guide/").headers["content-security-policy"]
        widget = client.get("/docpilot/docpilot.js").headers["content-security-policy"]
        worker = client.get("/docpilot/worker.js").headers["content-security-policy"]
        api = client.get("/api/health").headers["content-security-policy"]
    found = directives(page)
    assert "https://img.shields.io" in found["img-src"]
    assert "https://www.youtube-nocookie.com" in found["frame-src"]
    assert allows(found, "script-src", "https://www.googletagmanager.com")
    # Google Analytics' collection endpoints (Material's feedback widget sends through it).
    assert allows(found, "connect-src", "https://region1.google-analytics.com")
    assert allows(found, "connect-src", "https://www.google-analytics.com")
    assert not allows(found, "connect-src", "https://evil.example")
    assert "https://api.github.com" in found["connect-src"]  # Material's repository facts
    # What the base policy holds is kept as it was.
    assert found["object-src"] == ["'none'"] and "'wasm-unsafe-eval'" in found["script-src"]
    assert page.endswith("frame-ancestors 'self'") and guide == page
    assert widget == worker == HeaderSettings().page_csp()
    assert api == API_POLICY


def test_a_fixed_page_policy_warns_at_start_naming_what_it_blocks(
    analytics_site: Path, caplog: pytest.LogCaptureFixture
) -> None:
    headers = HeaderSettings(allow_page_sources=False)
    with caplog.at_level(logging.WARNING, logger="docpilot.headers"):
        app = create_app(analytics_site, Settings(headers=headers))
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    assert "img-src https://img.shields.io (/)" in warnings[0]
    assert "frame-src https://www.youtube-nocookie.com (/)" in warnings[0]
    assert "script-src https://www.googletagmanager.com (/404.html, /, /guide/)" in warnings[0]
    with serve_app(app) as running:
        policy = httpx.get(running.base_url + "/").headers["content-security-policy"]
    assert policy == headers.page_csp()


def test_a_page_policy_that_already_allows_a_source_is_left_as_it_is() -> None:
    sources = PageSources()
    scan_page(f'<img src="{BADGE}"><script src="https://cdn.example.net:8443/a.js"></script>',
              "/", sources)
    policy = "default-src 'self'; img-src 'self' https:; script-src 'self' https://*.example.net:*"
    assert sources.blocked_by(policy) == [("connect-src", "https://cdn.example.net:8443", ["/"])]
    widened = parse_policy(sources.widen(policy))
    assert widened["img-src"] == ["'self'", "https:"]
    assert widened["connect-src"] == ["'self'", "https://cdn.example.net:8443"]  # from default-src
    assert allows(parse_policy("img-src *"), "img-src", "http://a.example")
    assert not allows(parse_policy("default-src 'none'"), "img-src", "https://a.example")


def test_json_blocks_and_relative_urls_load_nothing() -> None:
    sources = PageSources()
    scan_page(
        '<script id="docpilot-config" type="application/json">{"support_url":'
        '"https://support.example.com/x"}</script><script type="application/ld+json">'
        '{"@context": "https://schema.org"}</script><img src="/assets/a.png">'
        '<img src="data:image/png;base64,AAAA"><a href="https://elsewhere.example/">x</a>',
        "/", sources)
    assert list(sources.items()) == []


def test_allow_page_sources_is_read_from_the_settings_file(tmp_path: Path) -> None:
    path = tmp_path / "docpilot.toml"
    path.write_text("[headers]\nallow_page_sources = false\n", encoding="utf-8")
    assert load_settings(path).headers.allow_page_sources is False
    assert Settings().headers.allow_page_sources is True
