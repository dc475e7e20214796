"""Browser tests: the reader's widget in Debian's Chromium, driven by pytest-playwright.

One browser per session (pytest-playwright's `browser`), a fresh context per test (so
storage starts empty). The site is example-site built once (`example_site`), served
with its API by the real runtime on uvicorn (`site_server`); its settings come from the
`runtime_settings` fixture, which a test module can override (a scripted model provider
plugs in there). Static mode gets its own build, served by a plain static file server.

Material's instant navigation only follows links listed in sitemap.xml, which MkDocs
leaves empty without `site_url`; `reader` serves the browser a sitemap of the built
pages at the live server's address, so instant navigation works as on a deployed site.
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from browsing import (
    CHROMIUM,
    RECORD_PROGRESS,
    SLOW_STREAM,
    Reader,
    file_server,
    is_browser_test,
    mkdocs_build,
    sitemap_xml,
    sse,
)
from corpora import EXAMPLE_SITE
from docpilot_runtime.browser.widget_assembly import assemble_widget
from docpilot_runtime.serve.app import create_app
from docpilot_runtime.settings.headers import PAGE_POLICY, HeaderSettings
from docpilot_runtime.settings.limits import LimitSettings
from docpilot_runtime.settings.load import Settings
from playwright.sync_api import Browser, Page
from playwright.sync_api import Route as BrowserRoute
from pyodide_seed import PyodideSeed, take_seed
from servers.runtime import RunningServer, serve_app
from shared_builds import SiteBuilds
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

# Markers of the longest browser tests: a cold Pyodide boot, a real model's turn.
LONG = ("cold_pyodide", "real_model")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test here that drives Chromium (through the `page` fixture) is `browser`, and
    runs after all the others: Playwright's sync API keeps an event loop running in the
    main thread until the session ends, and `asyncio.run` refuses to start under it.

    Last of the hooks: pytest's own reordering (which groups the tests of a parametrized
    session fixture, as pytest-playwright's `browser_name` is) would otherwise move other
    tests after these. Under pytest-xdist each worker is handed its tests in this order."""
    here = Path(__file__).resolve().parent
    browser = []
    for item in items:
        if here in item.path.resolve().parents and "page" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)
            browser.append(item)
    # pytest-xdist's scheduler (tests/conftest.py) tells them apart by node id alone.
    named = {item.nodeid for item in items if is_browser_test(item.nodeid)}
    if named != {item.nodeid for item in browser}:
        raise pytest.UsageError(
            "browsing.is_browser_test disagrees with the tests that use `page`: "
            + ", ".join(sorted(named ^ {item.nodeid for item in browser})[:5])
        )
    # The longest first (LONG: 10-25 s each), so the session does not end on one of them
    # with the other workers done.
    browser.sort(key=lambda item: not any(item.get_closest_marker(m) for m in LONG))
    items[:] = [item for item in items if item not in browser] + browser


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    """Debian's headless Chromium (playwright's own download is not available here),
    offline: every host name but 127.0.0.1 fails to resolve."""
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: install Debian's chromium-headless-shell "
            "(scripts/test.sh does)"
        )
    return {
        **browser_type_launch_args,
        "executable_path": str(CHROMIUM),
        "args": [
            "--no-sandbox",
            "--disable-gpu",
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        ],
    }


# The widget's script as the build joins it (unminified, so a failure points at a line),
# for tests of its tree renderer alone on a bare page of this origin (`renderer`).
WIDGET_SCRIPT = assemble_widget(Path(__file__).resolve().parents[2] / "widget" / "src")
RENDERER_ORIGIN = "http://docpilot.test"


@pytest.fixture
def renderer(page: Page) -> Iterator[Page]:
    """A bare page at RENDERER_ORIGIN with the widget's `renderTree` as window.renderTree."""

    def serve(route: BrowserRoute) -> None:
        path = route.request.url.removeprefix(RENDERER_ORIGIN)
        if path == "/":
            route.fulfill(
                body="<!doctype html><title>t</title><body></body>", content_type="text/html"
            )
        elif path == "/docpilot/docpilot.js":
            route.fulfill(body=WIDGET_SCRIPT, content_type="text/javascript")
        else:
            route.fulfill(status=404, body="")

    page.route(f"{RENDERER_ORIGIN}/**", serve)
    page.goto(f"{RENDERER_ORIGIN}/")
    page.evaluate(
        "async () => { window.renderTree = (await import('/docpilot/docpilot.js')).renderTree; }"
    )
    yield page


OTHER_ORIGIN_POLICY = PAGE_POLICY.replace(
    "connect-src 'self'", "connect-src 'self' http://127.0.0.1:*"
)


@pytest.fixture(scope="session")
def runtime_settings() -> Settings:
    """The runtime's settings for the browser tests (no provider: turns settle as passages),
    with the rate caps off (every test is one loopback client) and the default page CSP
    widened, as an owner would, to let the widget call a runtime on another loopback
    origin (`slow_api`)."""
    return Settings(
        caps=LimitSettings(answers_per_minute=0, answers_per_minute_per_client=0),
        headers=HeaderSettings(page_policy=OTHER_ORIGIN_POLICY),
    )


@pytest.fixture(scope="session")
def site_server(example_site: Path, runtime_settings: Settings) -> Iterator[RunningServer]:
    """example-site and its API on the real runtime, once per session."""
    if not (example_site / "docpilot" / "docpilot.js").is_file():
        pytest.fail(f"the build did not copy the widget into {example_site / 'docpilot'}")
    with serve_app(create_app(example_site, runtime_settings)) as running:
        yield running


@pytest.fixture(scope="session")
def base_url(site_server: RunningServer) -> str:
    """pytest-base-url's fixture: `page.goto("/reference/cli/")` goes to the live site."""
    return site_server.base_url


@pytest.fixture(scope="session")
def pyodide_seed(browser: Browser, site_server: RunningServer) -> Iterator[PyodideSeed]:
    """What one real Pyodide boot on the live site kept in Cache Storage."""
    with take_seed(browser, site_server.base_url) as seed:
        yield seed


@pytest.fixture(autouse=True)
def returning_reader(request: pytest.FixtureRequest) -> None:
    """A browser test starts as a returning reader's: Pyodide (and the memory snapshot of
    its first boot) already in the live site's Cache Storage, nothing else kept. Unless
    the test is marked `cold_pyodide`. See tests/chromium/pyodide_seed.py."""
    # Only a test that drives Chromium: asking for `page` starts Playwright's event loop
    # in this process, which the tests after it (asyncio.run) must never find running.
    # Not the renderer's tests either: their bare page never starts Pyodide.
    names = set(request.fixturenames)
    if "page" not in names or "renderer" in names or request.node.get_closest_marker("cold_pyodide"):
        return
    page: Page = request.getfixturevalue("page")
    request.getfixturevalue("pyodide_seed").into(page.context)


@pytest.fixture
def reader(page: Page, site_server: RunningServer, example_site: Path) -> Reader:
    """The test's page, recording requests and dialogs, with a live sitemap."""
    seen = Reader(page)
    page.on("request", lambda request: seen.requests.append(request))
    page.on("dialog", lambda dialog: (seen.dialogs.append(dialog.message), dialog.dismiss()))
    sitemap = sitemap_xml(example_site, site_server.base_url)
    page.route(
        "**/sitemap.xml",
        lambda route: route.fulfill(body=sitemap, content_type="application/xml"),
    )
    page.add_init_script(RECORD_PROGRESS)
    page.set_default_timeout(15_000)
    return seen


@pytest.fixture(scope="session")
def slow_api(site_server: RunningServer) -> Iterator[str]:
    """Another origin whose `POST /api/ask` streams `SLOW_STREAM` with pauses between
    events, the way a model's answer arrives; CORS lets example-site's pages call it."""

    async def ask(request: Request) -> StreamingResponse:
        await request.body()

        async def events() -> Any:
            for pause, name, data in SLOW_STREAM:
                await asyncio.sleep(pause)
                yield sse((name, data))

        return StreamingResponse(events(), media_type="text/event-stream")

    app = Starlette(
        routes=[Route("/api/ask", ask, methods=["POST"])],
        middleware=[
            Middleware(
                CORSMiddleware,
                allow_origins=[site_server.base_url],
                allow_methods=["POST"],
                allow_headers=["Content-Type"],
            )
        ],
    )
    with serve_app(app) as running:
        yield running.base_url


# ------------------------------------------------------------------ static mode


@pytest.fixture(scope="session")
def static_site(site_builds: SiteBuilds) -> Path:
    """example-site built with `endpoint: browser` (static mode), once."""

    def build(work: Path) -> subprocess.CompletedProcess[str]:
        config = yaml.safe_load((EXAMPLE_SITE / "mkdocs.yml").read_text(encoding="utf-8"))
        plugins = []
        for plugin in config["plugins"]:
            if plugin == "docpilot" or (isinstance(plugin, dict) and "docpilot" in plugin):
                options = plugin["docpilot"] if isinstance(plugin, dict) else {}
                cache = str(EXAMPLE_SITE / ".cache" / "docpilot")
                plugin = {"docpilot": {**(options or {}), "endpoint": "browser", "cache_dir": cache}}
            plugins.append(plugin)
        config.update(
            plugins=plugins,
            docs_dir=str(EXAMPLE_SITE / "docs"),
            site_dir=str(work / "site"),
        )
        path = work / "mkdocs.yml"
        text = yaml.safe_dump(config, sort_keys=False, allow_unicode=True)
        path.write_text(text, encoding="utf-8")
        done = mkdocs_build(path)
        if done.returncode != 0:
            pytest.fail(f"mkdocs build of {path} failed:\n{done.stdout}\n{done.stderr}")
        return done

    return site_builds.get({"example-site": "endpoint: browser"}, build, inputs=[EXAMPLE_SITE]).site


@pytest.fixture(scope="session")
def static_server(static_site: Path) -> Iterator[str]:
    """The static site on a plain file server: no runtime, no /api."""
    with file_server(static_site) as base:
        yield base
