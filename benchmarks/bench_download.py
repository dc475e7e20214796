"""What a reader downloads before the first answer, over the wire, cold and warm.

Builds example-site in static mode (``endpoint: browser``, bench_browser.build_example),
serves it with ``docpilot serve``'s own static files (`app.SiteFiles`: precompressed
.br/.gz siblings with Content-Encoding) on uvicorn in a thread, and drives Debian's
headless Chromium as a reader: open /reference/cli/, click the launcher, ask a covered
question, wait for the answer's final draw. Bytes over the wire are counted by the
server (an ASGI wrapper summing the status line, headers and body bytes it sends) for
every request the page and its worker made, from navigation to the answer (the page's
CDP session cannot see a dedicated worker's requests; the server sees all). Cold: a fresh
context (empty cache); warm: a second page in the same context. Each is measured
locally and under CDP ``Network.emulateNetworkConditions`` at 20 Mbit/s, 40 ms latency
(``--smoke``: local only, one sample). Also prints the per-file raw / gzip / brotli sizes
the build wrote into site/docpilot/pyodide/.

Run: ``.venv/bin/python benchmarks/bench_download.py [--n 3] [--smoke]``
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import uvicorn
from bench_browser import HERE, build_example
from docpilot_runtime.browser.pyodide_core import SITE_FILES, sizes
from docpilot_runtime.serve.site_files import SiteFiles
from playwright.sync_api import BrowserContext, sync_playwright
from starlette.applications import Starlette
from starlette.routing import Mount

THROTTLED = {"offline": False, "latency": 40, "downloadThroughput": 20e6 / 8, "uploadThroughput": 20e6 / 8}
LOCAL = {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1}
QUESTION = "How do I exclude a page from the assistant?"
OUT = HERE / "out" / "bench_download"


class Counted:
    """An ASGI app that counts what it sends: requests, and header plus body bytes."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.bytes = 0
        self.ours = 0  # of which under /docpilot/ (the widget, Pyodide, the index)
        self.requests = 0
        self.paths: list[tuple[str, int, str]] = []  # (path, status, content-encoding)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async def counting(message: Any) -> None:
            if message["type"] == "http.response.start":
                self.requests += 1
                self.bytes += 17 + sum(len(k) + len(v) + 4 for k, v in message["headers"])
                headers = dict(message["headers"])
                coding = headers.get(b"content-encoding", b"").decode()
                self.paths.append((scope["path"], message["status"], coding))
            elif message["type"] == "http.response.body":
                self.bytes += len(message.get("body", b""))
                if scope["path"].startswith("/docpilot/"):
                    self.ours += len(message.get("body", b""))
            await send(message)

        await self.app(scope, receive, counting)


@contextmanager
def serve(site_dir: Path) -> Iterator[tuple[str, Counted]]:
    app = Counted(Starlette(routes=[Mount("/", app=SiteFiles(directory=site_dir, html=True))]))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:  # uvicorn sets it once bound; nothing else to wait on
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", app
    finally:
        server.should_exit = True
        thread.join()


def first_answer(
    context: BrowserContext, url: str, network: dict[str, Any], counted: Counted
) -> dict[str, float]:
    """Open ``url`` in a new page of ``context``, ask QUESTION; bytes and seconds."""
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.emulateNetworkConditions", network)
    counted.bytes = counted.ours = counted.requests = 0
    counted.paths = []
    began = time.perf_counter()
    page.goto(url)
    page.locator(".dp-launcher").click()
    page.locator(".dp-input").fill(QUESTION)
    page.locator(".dp-input").press("Enter")
    body = page.locator(".dp-turn .dp-body[data-kind]").first
    body.wait_for(timeout=180_000)
    seconds = time.perf_counter() - began
    kind = body.get_attribute("data-kind")
    if kind != "passages":
        raise SystemExit(f"the widget answered {kind!r}, not passages: {body.inner_text()}")
    page.close()
    return {
        "bytes": counted.bytes,
        "ours": counted.ours,
        "seconds": seconds,
        "requests": counted.requests,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--n", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="local only, one sample")
    args = parser.parse_args()
    n = 1 if args.smoke else args.n
    site = build_example(OUT / "example")
    runtime = site.site_dir / "docpilot" / "pyodide"
    print("file, raw / .gz / .br bytes:")
    for name, by in sizes(runtime, SITE_FILES).items():
        print(f"  {name}: {' / '.join(str(by.get(s, '-')) for s in ('', '.gz', '.br'))}")
    networks = {"local": LOCAL} if args.smoke else {"local": LOCAL, "20 Mbit/s, 40 ms": THROTTLED}
    rows: dict[tuple[str, str], list[dict[str, float]]] = {}
    with serve(site.site_dir) as (base, counted), sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path="/usr/bin/chromium",
            args=["--no-sandbox", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"],
        )
        for _ in range(n):
            for label, network in networks.items():
                context = browser.new_context()
                url = base + site.page
                for cache in ("cold", "warm"):
                    sample = first_answer(context, url, network, counted)
                    rows.setdefault((label, cache), []).append(sample)
                    if args.smoke:
                        print(label, cache, counted.paths)
                context.close()
        browser.close()
    print(f"\nbefore the first answer (median of {n}):")
    print("| network | cache | MB over the wire, all | of which docpilot/ | requests | s to answer |")
    print("|---|---|---|---|---|---|")
    for (label, cache), samples in rows.items():
        mb = statistics.median(s["bytes"] for s in samples) / 1e6
        ours = statistics.median(s["ours"] for s in samples) / 1e6
        req = statistics.median(s["requests"] for s in samples)
        sec = statistics.median(s["seconds"] for s in samples)
        print(f"| {label} | {cache} | {mb:.2f} | {ours:.2f} | {req:.0f} | {sec:.1f} |")


if __name__ == "__main__":
    main()
