"""A returning reader's Pyodide, for the browser tests that are not about the boot.

Each browser test gets a fresh context: empty storage, so no test sees another's
conversation. But an empty Cache Storage also means a cold Pyodide boot (Python started
from scratch, about 2.5 s of CPU) in nearly every test, when only a few tests are about
that boot. So, once per origin and test process, one real boot runs and what the worker
kept in Cache Storage is noted (its files, and the memory snapshot it took); every later
context is given the same cache before its test starts, as a reader's browser has it
after a first visit: the files fetched again from the site, the snapshot from a loopback
server of its own. The worker then restores Python from the snapshot, as on a reader's
second page load.

Nothing else is carried over: local and session storage, cookies and the HTTP cache
start empty. Tests about the first boot, the download or Cache Storage itself mark
themselves ``cold_pyodide`` and get an untouched context (tests/chromium/conftest.py).
"""

from __future__ import annotations

import base64
import http.server
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from browsing import loopback_server
from playwright.sync_api import Browser, BrowserContext, Page

CACHE_PREFIX = "docpilot-pyodide-"  # the worker's Cache Storage name (widget/worker.js)
SNAPSHOT = "docpilot-snapshot.bin"  # its memory snapshot's key, beside the files
SEED_PAGE = "/__docpilot_seed__/"  # a blank page of the origin, served by a route
BLANK = "<!doctype html><title>seed</title>"

BOOT_AND_READ = """async ([workerUrl, prefix, snapshot]) => {
  const worker = new Worker(workerUrl, { type: "module" });
  try {
    await new Promise((resolve, reject) => {
      worker.onmessage = ({ data }) => (data.ok ? resolve() : reject(new Error(data.error)));
      worker.onerror = (e) => reject(new Error(e.message || "worker failed"));
      worker.postMessage({ id: 1, type: "boot" });
    });
  } finally {
    worker.terminate();
  }
  const names = (await caches.keys()).filter((n) => n.startsWith(prefix));
  if (names.length !== 1) throw new Error(`expected one ${prefix}* cache, found ${names}`);
  const cache = await caches.open(names[0]);
  const urls = (await cache.keys()).map((r) => r.url);
  const kept = await cache.match(urls.find((u) => u.endsWith(snapshot)) || "none");
  if (!kept) throw new Error(`the boot kept no memory snapshot: ${urls}`);
  const bytes = new Uint8Array(await kept.arrayBuffer());
  let text = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    text += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  }
  return { name: names[0], urls, snapshot: btoa(text) };
}"""

PUT_ALL = """async ([name, urls, snapshot, source]) => {
  const cache = await caches.open(name);
  await Promise.all(urls.map(async (url) => {
    const response = await fetch(url.endsWith(snapshot) ? source : url);
    if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
    await cache.put(url, response);
  }));
}"""


@dataclass(frozen=True)
class PyodideSeed:
    """What the worker kept in Cache Storage after one boot on ``origin``: its cache's
    name, the URLs it holds, and where this process serves the snapshot from."""

    origin: str
    cache_name: str
    urls: tuple[str, ...]
    snapshot_source: str

    def into(self, context: BrowserContext) -> None:
        """Give ``context`` this cache, through a page of its own (closed after)."""
        # The snapshot comes from another loopback port: Chromium asks for this first.
        context.grant_permissions(["local-network-access"], origin=self.origin)
        page, pattern = _blank_page(context, self.origin)
        try:
            page.evaluate(
                PUT_ALL, [self.cache_name, list(self.urls), SNAPSHOT, self.snapshot_source]
            )
        finally:
            page.close()
            context.unroute(pattern)
            context.clear_permissions()  # as a fresh context has them: none


def _blank_page(context: BrowserContext, origin: str) -> tuple[Page, str]:
    """A new page of ``context`` on a blank page of ``origin`` (served by a route, so the
    site is not loaded), and the route's pattern."""
    pattern = f"{origin}{SEED_PAGE}**"
    context.route(pattern, lambda route: route.fulfill(body=BLANK, content_type="text/html"))
    page = context.new_page()
    page.goto(f"{origin}{SEED_PAGE}")
    return page, pattern


def _bytes_handler(body: bytes) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Access-Control-Allow-Origin", "*")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def take_seed(browser: Browser, origin: str) -> Iterator[PyodideSeed]:
    """Boot the site's worker once in a context of its own, note its cache, and serve
    its snapshot on loopback for the block."""
    context = browser.new_context()
    try:
        page, _ = _blank_page(context, origin)
        got = page.evaluate(BOOT_AND_READ, [f"{origin}/docpilot/worker.js", CACHE_PREFIX, SNAPSHOT])
    finally:
        context.close()
    with loopback_server(_bytes_handler(base64.b64decode(got["snapshot"]))) as source:
        yield PyodideSeed(origin, got["name"], tuple(got["urls"]), f"{source}/{SNAPSHOT}")
