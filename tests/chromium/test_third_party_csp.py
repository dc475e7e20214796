"""A Material site that loads things from another origin, behind `docpilot serve`: a
badge image, a script named in `extra_javascript`, a script an inline loader adds at run
time (as Material's Google Analytics does) and the beacon that script sends home. Under
the runtime's default headers every one of them loads, the browser reports no policy
violation, and the widget still answers."""

from __future__ import annotations

import http.server
from pathlib import Path
from typing import Any, ClassVar

from browsing import Reader, loopback_server
from corpora import SiteFactory, mkdocs_build
from docpilot_runtime.serve.app import create_app
from docpilot_runtime.settings.limits import LimitSettings
from docpilot_runtime.settings.load import Settings
from playwright.sync_api import Page
from servers.runtime import serve_app
from test_csp import violations, watch_violations

BADGE = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="90" height="20">'
    '<rect width="90" height="20" fill="#4c1"/></svg>'
)
# What a third party's script does: mark the page, then send a beacon to its own origin.
SCRIPT = "window.__thirdParty = (window.__thirdParty || 0) + 1; navigator.sendBeacon('{base}/collect', 'x');"


class ThirdParty(http.server.BaseHTTPRequestHandler):
    """Another origin (another loopback port): a badge, two scripts, a beacon endpoint."""

    beacons: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        base = f"http://127.0.0.1:{self.server.server_address[1]}"
        bodies = {
            "/badge.svg": ("image/svg+xml", BADGE),
            "/tag.js": ("text/javascript", SCRIPT.format(base=base)),
            "/loaded-later.js": ("text/javascript", SCRIPT.format(base=base)),
        }
        kind, body = bodies.get(self.path, ("text/plain", ""))
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", kind)
        self.end_headers()
        self.wfile.write(body.encode())

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.beacons.append(self.path)
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def page_with_third_parties(make_site: SiteFactory, other: str) -> Path:
    loader = (  # Material's analytics partial adds its script the same way
        "<script>var s = document.createElement('script'); "
        f's.src = "{other}/loaded-later.js"; document.head.appendChild(s);</script>'
    )
    config = make_site(
        {"index.md": (
            f"# Storage\n\n![build status]({other}/badge.svg)\n\n{loader}\n\n"
            "## Embedding cache\n\nThe embedding cache is kept in the user cache directory.\n"
        )},
        extra_javascript=[f"{other}/tag.js"],
    )
    mkdocs_build(config)
    return config.parent / "site"


def test_a_site_loading_from_other_origins_works_behind_docpilot_serve(
    page: Page, make_site: SiteFactory
) -> None:
    ThirdParty.beacons.clear()
    with loopback_server(ThirdParty) as other:
        site = page_with_third_parties(make_site, other)
        settings = Settings(caps=LimitSettings(answers_per_minute=0, answers_per_minute_per_client=0))
        with serve_app(create_app(site, settings)) as running:
            reader = Reader(page)
            page.set_default_timeout(15_000)
            console = watch_violations(reader)
            page.goto(f"{running.base_url}/")
            page.wait_for_function("() => window.__thirdParty === 2")
            badge = page.locator("img[alt='build status']")
            badge.wait_for()
            assert page.evaluate("(img) => img.complete && img.naturalWidth", badge.element_handle()) == 90
            reader.open_panel()
            reader.ask("Where is the embedding cache kept?")
            assert reader.wait_answer().get_attribute("data-kind") == "passages"
            assert violations(reader, console) == []
            widget_policy = page.request.get(f"{running.base_url}/docpilot/worker.js").headers
    assert ThirdParty.beacons == ["/collect", "/collect"]
    # The widget's own files keep DocPilot's strict policy: nothing of the other origin.
    assert other not in widget_policy["content-security-policy"]
