"""The security headers every response carries, and the Content-Security-Policy they hold.

Two policies, because the runtime serves two kinds of thing:

- `/api/*` answers JSON and event streams that no browser should render or frame, so
  its policy allows nothing at all (``default-src 'none'; frame-ancestors 'none'``).
- Site pages are MkDocs output: Material's theme writes inline scripts (palette,
  scope, instant navigation), and the widget runs Pyodide in a module worker, which
  compiles WebAssembly. So pages allow the site's own scripts, inline ones included,
  and ``'wasm-unsafe-eval'`` (WebAssembly only, not JavaScript ``eval``); everything
  is loaded from the site's own origin, except Material's default Google Fonts.
  Model output never becomes script: the widget renders answers with DOM APIs, and
  ``img-src 'self' data:`` keeps an image beacon that slipped into an answer from
  reaching another origin.

That built-in page policy is DocPilot's own: the widget's files (``docpilot/`` and
below, the worker among them) get it as it is. The site's pages get it widened by what
they load from other origins, read from the built HTML at start-up (`page_sources`):
badges, analytics, a font CDN keep working as built. With `[headers]
allow_page_sources = false` pages get `[headers] page_policy` alone, and the start-up
log names what it blocks. Owners change the base policy with `[headers] page_policy`
(a CDN for Pyodide, a runtime on another origin) and who may frame the site with
`[headers] frame_ancestors`.
"""

from __future__ import annotations

import logging
from pathlib import Path

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from docpilot_runtime.serve.page_sources import describe, scan_site
from docpilot_runtime.serve.root_path import route_path
from docpilot_runtime.settings.headers import HeaderSettings

log = logging.getLogger("docpilot.headers")

API_POLICY = "default-src 'none'; frame-ancestors 'none'"
REFERRER_POLICY = "strict-origin-when-cross-origin"
WIDGET_FOLDER = "docpilot"  # the widget's files, in the site root or a version's folder


def is_widget_file(path: str) -> bool:
    """A file the build put in a ``docpilot/`` folder (script, worker, Pyodide, bundle):
    DocPilot's own, never a page (pages are HTML)."""
    folders = path.split("/")[:-1]
    return WIDGET_FOLDER in folders and not path.endswith((".html", "/"))


class PagePolicies:
    """The Content-Security-Policy for each kind of path: the widget's files get the
    settings' page policy as it is; the site's pages get it widened by what the built
    pages under ``site_dir`` load from other origins (unless `allow_page_sources` is
    off), read now and again by `refresh` after a rebuild."""

    def __init__(self, settings: HeaderSettings, site_dir: Path | None = None) -> None:
        self.settings = settings
        self.site_dir = site_dir
        self.widget = settings.page_csp()
        self.page = self.widget
        if site_dir is not None:
            self.refresh()

    def refresh(self) -> None:
        """Read the built pages again and say what they load from other origins: allowed
        (info), or, with `allow_page_sources` off, blocked (a warning)."""
        assert self.site_dir is not None
        settings = self.settings
        sources = scan_site(self.site_dir)
        blocked = sources.blocked_by(settings.page_policy)
        if blocked and settings.allow_page_sources:
            log.info(
                "the page policy allows what %d built pages load from other origins: %s",
                sources.pages,
                describe(blocked),
            )
        elif blocked:
            log.warning(
                "[headers] page_policy blocks what the built pages load from other origins "
                "(set allow_page_sources = true, or add them to page_policy): %s",
                describe(blocked),
            )
        if settings.allow_page_sources:
            self.page = settings.page_csp(sources.widen(settings.page_policy))

    def for_path(self, path: str) -> str:
        if path == "/api" or path.startswith("/api/"):
            return API_POLICY
        return self.widget if is_widget_file(path) else self.page


class SecurityHeaders:
    """ASGI middleware adding nosniff, Referrer-Policy and a CSP to every HTTP response
    (errors and 404s included), without replacing a header a handler set itself."""

    def __init__(self, app: ASGIApp, policies: PagePolicies) -> None:
        self.app = app
        self.policies = policies

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = route_path(scope)  # below a --root-path prefix
        policy = self.policies.for_path(path)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers.setdefault("X-Content-Type-Options", "nosniff")
                headers.setdefault("Referrer-Policy", REFERRER_POLICY)
                headers.setdefault("Content-Security-Policy", policy)
            await send(message)

        await self.app(scope, receive, send_with_headers)


__all__ = ["API_POLICY", "PagePolicies", "SecurityHeaders", "is_widget_file"]
