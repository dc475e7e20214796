"""Helpers for the browser tests: a page that records what it does, crafted answers,
and changed widget options (imported by conftest.py and the tests)."""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from docpilot_runtime.settings.headers import HeaderSettings
from playwright.sync_api import Page, Request, Route

SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-results" / "screenshots"
# Debian's headless build of Chromium (package chromium-headless-shell): the same version,
# Blink and V8 as /usr/bin/chromium without the desktop browser around them, as
# Playwright's own headless runs use. A quarter less CPU per test than the full browser
# here (benchmarks, which time what readers get, keep /usr/bin/chromium).
CHROMIUM = Path("/usr/bin/chromium-headless-shell")
# Pyodide boots in 2-6 s here; the first answer of a context waits for it.
ANSWER_TIMEOUT_MS = 60_000
MKDOCS_ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}


def mkdocs_build(config: Path) -> subprocess.CompletedProcess[str]:
    """A real `mkdocs build` in a subprocess, as tests/conftest.py runs it (that module
    cannot be imported from here: this folder has a conftest.py of its own)."""
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-f", str(config)],
        capture_output=True,
        text=True,
        env=MKDOCS_ENV,
        cwd=config.parent,
    )


def is_browser_test(nodeid: str) -> bool:
    """A test that drives Chromium, told by its node id alone (pytest-xdist's scheduler
    sees nothing else): under tests/chromium/ and parametrized by pytest-playwright's
    browser. conftest.py checks that this agrees with the tests it runs last."""
    return nodeid.startswith("tests/chromium/") and "[chromium" in nodeid


def sitemap_xml(site_dir: Path, base: str) -> str:
    """A sitemap of every built page, at ``base`` (what MkDocs writes with `site_url`)."""
    urls = sorted(
        "/" + p.parent.relative_to(site_dir).as_posix() + "/"
        for p in site_dir.rglob("index.html")
        if "docpilot" not in p.parts
    )
    locs = "".join(f"<url><loc>{base}{u.replace('/./', '/')}</loc></url>" for u in urls)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{locs}</urlset>'
    )


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    """A static host: the types Pyodide needs, and the page policy the runtime sends."""

    extensions_map: ClassVar[dict[str, str]] = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".wasm": "application/wasm",
        ".mjs": "text/javascript",
        ".js": "text/javascript",
    }

    def end_headers(self) -> None:
        # The page policy the runtime sends, as an owner's static host would: static
        # mode (Pyodide in a module worker) must work under it.
        self.send_header("Content-Security-Policy", HeaderSettings().page_csp())
        self.send_header("X-Content-Type-Options", "nosniff")
        super().end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def file_server(
    directory: Path, handler_class: type[http.server.SimpleHTTPRequestHandler] = QuietHandler
) -> Iterator[str]:
    """``directory`` on a plain static file server (`QuietHandler`) on loopback."""
    with loopback_server(functools.partial(handler_class, directory=str(directory))) as base:
        yield base


class _Server(http.server.ThreadingHTTPServer):
    # socketserver's backlog of 5 is small for a browser that opens six connections at
    # once, each closed after one reply (HTTP/1.0), on a busy machine.
    request_queue_size = 128


@contextmanager
def loopback_server(handler: Callable[..., http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    """A threaded HTTP server on a free loopback port for the block; its base URL."""
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="test-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@dataclass
class Reader:
    """A page plus what it did: every request, dialogs, and helpers to use the widget."""

    page: Page
    requests: list[Request] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def api_requests(self) -> list[Request]:
        """Requests to the API that carry anything of the reader's: all but the widget's
        `GET /api/health`, which asks whether a runtime is there."""
        return [
            r
            for r in self.requests
            if "/api/" in r.url and not (r.method == "GET" and r.url.endswith("/api/health"))
        ]

    def asks(self) -> list[dict[str, Any]]:
        """The JSON bodies of every POST /api/ask so far."""
        bodies = [r.post_data_json for r in self.api_requests() if r.url.endswith("/api/ask")]
        return [b for b in bodies if isinstance(b, dict)]

    def open_panel(self) -> None:
        self.page.locator(".dp-launcher").click()
        self.page.locator("#dp-panel").wait_for(state="visible")

    def ask(self, question: str) -> None:
        """Type and send a question (the panel must be open)."""
        self.page.locator(".dp-input").fill(question)
        self.page.locator(".dp-input").press("Enter")

    def wait_answer(self, turn: int = 0) -> Any:
        """The body of the ``turn``-th answer once its final result is drawn."""
        body = self.page.locator(".dp-turn").nth(turn).locator(".dp-body[data-kind]")
        body.wait_for(timeout=ANSWER_TIMEOUT_MS)
        return body

    def screenshot(self, name: str) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        self.page.screenshot(path=str(path))
        return path


# Records, from the first script on, what the widget showed while a turn ran: each
# progress line, each redraw of a streamed draft, and when the citations appeared (a
# MutationObserver sees every change, however briefly it was on screen).
RECORD_PROGRESS = """
window.__docpilotSeen = [];
new MutationObserver((records) => {
  for (const record of records) for (const node of record.addedNodes) {
    const seen = window.__docpilotSeen;
    if (node.nodeType !== 1) continue;
    if (node.matches('.dp-steps li')) seen.push(['progress', node.textContent]);
    if (node.matches('.dp-cites')) seen.push(['citations', '']);
    const body = record.target.closest && record.target.closest('.dp-body:not([data-kind])');
    if (body) seen.push(['draft', body.textContent]);
  }
}).observe(document, {childList: true, subtree: true});
"""


def sse(*events: tuple[str, dict[str, Any]]) -> str:
    """A Server-Sent Events body, as the runtime writes it."""
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)


def crafted_blocks(markdown: str, citations: list[dict[str, Any]]) -> list[Any]:
    """The tree a runtime would send for ``markdown``: the real validator's, with ``[n]``
    naming the n-th citation and links kept to the example site's own pages."""
    from docpilot_runtime.bundle.schema import Page as BundlePage
    from docpilot_runtime.check.validate import Source, validate_answer

    emitted = {c["id"]: Source(c["id"], c["url"], c["title"]) for c in citations}
    pages = [
        BundlePage("/reference/cli/", "CLI", frozenset()),
        BundlePage("/", "Home", frozenset()),
    ]
    validated = validate_answer(markdown, emitted, pages, answer_citations=list(emitted))
    return validated.blocks or [{"t": "p", "c": [markdown]}]


def result(**fields: Any) -> dict[str, Any]:
    """A result object (DESIGN.md) with defaults for every field not given."""
    base: dict[str, Any] = {
        "turn_id": "0123456789abcdef0123456789abcdef",
        "kind": "answer",
        "markdown": "",
        "bundle_hash": "0" * 64,
        "citations": [],
        "closest": [],
        "tentative": False,
        "confidence": 80,
        "model_confidence": 80,
        "retriever": "hybrid",
        "rescued": False,
        "ranked": [],
        "actions": [],
        "summary": "",
        "credential_kind": None,
        "usage": None,
    }
    merged = {**base, **fields}
    if "blocks" not in fields:
        merged["blocks"] = crafted_blocks(merged["markdown"], merged["citations"])
    return merged


# (pause in seconds, event, data): a draft that streams in, then an answer that differs
# from it (validation may change the end), as the runtime's stream can.
SLOW_STREAM: list[tuple[float, str, dict[str, Any]]] = [
    (0.0, "progress", {"stage": "retrieval", "message": "Found 2 results"}),
    (0.3, "progress", {"stage": "reading", "message": "Reading Plugin configuration"}),
    # The open paragraph as a validated draft, then settled (the text may differ).
    (
        0.6,
        "delta",
        {"text": "", "blocks": [], "draft": [{"t": "p", "c": ["Draft sentence one, "]}]},
    ),
    (
        0.6,
        "delta",
        {
            "text": "Draft sentence one, draft sentence two [1].",
            "blocks": [
                {
                    "t": "p",
                    "c": ["Draft sentence one, draft sentence two ", {"t": "cite", "n": 1}, "."],
                }
            ],
            "draft": [],
        },
    ),
    (
        1.0,
        "answer",
        result(
            markdown="Final answer, validated [1].",
            citations=[
                {
                    "n": 1,
                    "id": "/reference/plugin-configuration/#exclude",
                    "url": "/reference/plugin-configuration/#exclude",
                    "title": "exclude",
                }
            ],
        ),
    ),
]


def serve_answer(page: Page, answer: dict[str, Any], deltas: tuple[str, ...] = ()) -> None:
    """Answer every POST /api/ask of this page with a crafted stream (the request itself
    is still recorded by `reader`)."""
    body = sse(
        ("progress", {"stage": "retrieval", "message": "Found 1 results"}),
        *(("delta", {"text": d, "blocks": [], "draft": [{"t": "p", "c": [d]}]}) for d in deltas),
        ("answer", answer),
    )

    def fulfill(route: Route) -> None:
        route.fulfill(status=200, body=body, headers={"Content-Type": "text/event-stream"})

    page.route("**/api/ask", fulfill)


def with_widget_config(page: Page, path: str, change: Callable[[dict[str, Any]], None]) -> None:
    """Serve ``path`` with its widget configuration changed by ``change`` (as an owner's
    mkdocs.yml options would), so one build covers options such as `history`."""

    def handle(route: Route) -> None:
        response = route.fetch()
        html = response.text()
        match = re.search(
            r'(<script id="docpilot-config" type="application/json">)(.*?)(</script>)', html
        )
        assert match, f"{path} has no widget configuration"
        config = json.loads(match.group(2))
        change(config)
        data = json.dumps(config).replace("<", "\\u003c")
        html = html[: match.start(2)] + data + html[match.end(2) :]
        route.fulfill(response=response, body=html)

    page.route(f"**{path}", handle)


# The contrast ratio (WCAG 2) of an element's text against the first opaque background
# behind it, from computed styles; translucent layers are composited over the ones below
# (used by the error and accessibility tests).
CONTRAST = """(node) => {
  // rgb()/rgba() in 0-255; color-mix() computes to color(srgb r g b / a) in 0-1.
  const rgba = (s) => { const m = s.match(/[\\d.]+/g).map(Number); const k = s.startsWith("color(") ? 255 : 1; return [m[0] * k, m[1] * k, m[2] * k, m[3] ?? 1]; };
  const over = (top, below) => top.slice(0, 3).map((c, i) => c * top[3] + below[i] * (1 - top[3])).concat(1);
  const layers = [];
  for (let e = node; e; e = e.parentElement) {
    const bg = rgba(getComputedStyle(e).backgroundColor);
    if (bg[3] > 0) layers.push(bg);
    if (bg[3] === 1) break;
  }
  let bg = [255, 255, 255, 1];
  for (const layer of layers.reverse()) bg = over(layer, bg);
  const fg = over(rgba(getComputedStyle(node).color), bg);
  const lum = (c) => { const [r, g, b] = c.slice(0, 3).map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; }); return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
  return (a + 0.05) / (b + 0.05);
}"""
