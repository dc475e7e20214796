"""`docpilot serve SITE_DIR` follows a rebuilt site folder: a `mkdocs build` run while it
serves adds a page, and the runtime answers from it without a restart (default
settings), its page policy following what the new page loads; with `watch_seconds = 0`
it says at start that it will not follow."""

from __future__ import annotations

import logging
import time

import httpx
import pytest
from corpora import SiteFactory, mkdocs_build
from docpilot_runtime.bundle.read import load_bundle
from docpilot_runtime.serve.app import create_app
from docpilot_runtime.settings.bundle import BundleSettings
from docpilot_runtime.settings.load import Settings
from servers.runtime import serve_app

WAIT = 60.0  # seconds: the default watch interval, twice, on a loaded machine
FIRST = {"index.md": "# Home\n\nThe product overview and how to install it with pip.\n"}
ADDED = {
    "proxies.md": (
        "# Reverse proxies\n\n![status](https://img.shields.io/badge/proxy-ok-green)\n\n"
        "## Trusted proxies\n\nList the reverse proxy's address in trusted_proxies so that "
        "X-Forwarded-For names the reader.\n"
    )
}
QUESTION = "How do I make X-Forwarded-For name the reader behind a reverse proxy?"


def ask(base_url: str) -> dict[str, object]:
    reply = httpx.post(f"{base_url}/api/ask", json={"question": QUESTION}, timeout=60)
    assert reply.status_code == 200
    result: dict[str, object] = reply.json()
    return result


def cited_pages(result: dict[str, object]) -> set[str]:
    citations = result["citations"]
    assert isinstance(citations, list)
    return {c["url"].split("#")[0] for c in citations if "proxies" in c["url"]}


def test_a_rebuild_under_a_running_serve_is_answered_without_a_restart(
    make_site: SiteFactory,
) -> None:
    config = make_site(FIRST)
    mkdocs_build(config)
    site = config.parent / "site"
    with serve_app(create_app(site, Settings())) as running:
        assert not cited_pages(ask(running.base_url))
        make_site({**FIRST, **ADDED})
        mkdocs_build(config)
        rebuilt = load_bundle(site).hash
        deadline = time.monotonic() + WAIT
        while httpx.get(f"{running.base_url}/api/health").json()["bundle_hash"] != rebuilt:
            assert time.monotonic() < deadline, "the runtime never took the rebuilt bundle"
            time.sleep(0.1)  # polling the health endpoint, with a deadline
        result = ask(running.base_url)
        policy = httpx.get(f"{running.base_url}/proxies/").headers["content-security-policy"]
    assert result["kind"] == "passages", result
    assert cited_pages(result) == {"/proxies/"}
    assert "https://img.shields.io" in policy, "the page policy follows the rebuilt pages"


def test_with_watching_off_the_runtime_says_it_serves_the_bundles_it_started_with(
    make_site: SiteFactory, caplog: pytest.LogCaptureFixture
) -> None:
    config = make_site(FIRST)
    mkdocs_build(config)
    settings = Settings(bundle=BundleSettings(watch_seconds=0))
    with caplog.at_level(logging.INFO, logger="docpilot.bundle"), serve_app(
        create_app(config.parent / "site", settings)
    ):
        pass
    said = [r.getMessage() for r in caplog.records if r.name == "docpilot.bundle"]
    assert any("restart" in m and "watch_seconds" in m for m in said), said
