"""Static mode in a real browser: Pyodide boot, submit-to-answer time, widget size.

One run builds each site with ``endpoint: browser`` (static mode) and serves it with a
plain static file server (``python -m http.server`` semantics in a thread: no
Cache-Control header, Last-Modified + If-Modified-Since/304, no compression; ``.wasm`` as
application/wasm, ``.mjs``/``.js`` as text/javascript), then drives Debian's headless
Chromium (offline: every host but 127.0.0.1 fails to resolve). Sites:

(a) example-site: a temp copy of example-site/mkdocs.yml with ``docs_dir`` pointing back;
(b) the Material for MkDocs corpus through ``tests/corpora.py``'s ``reduced_config``
    (``--no-material`` skips it).

Measured:

1. Pyodide boot in the worker, from a blank page of the site: ``new Worker(docpilot/worker.js,
   {type: "module"})``, post ``{type: "boot"}``, wait for the reply ("boot"; the worker's own
   ``bootMs`` is printed too), then ``{type: "load"}`` of static.json ("load index").
   Cold: a new context (empty HTTP cache). Warm: a second page in the same context, so
   the HTTP cache is warm (no ``page.route``: it disables the cache). Each sample is its
   own context, of two kinds: "profile", a new Chromium on a fresh profile directory (a
   disk cache, as a reader's browser), and "incognito", Playwright's ``new_context()``
   (an in-memory cache, as a private window; it does not keep the 9.6 MB wasm). The server
   counts the requests it answered 200 vs 304.
2. Submit to answer through the real widget, as a reader: the panel opened with the
   launcher, the question typed into the box and Enter pressed. The clock starts in a
   capture-phase keydown listener for that Enter and stops at the first animation frame
   after the widget sets ``data-kind`` on the answer body (its final draw). "worker booted":
   a first question has already been answered on that page; every sample starts with
   "New chat" (no history). "first question, fresh page": the page is loaded, the launcher
   clicked (which starts the boot), the question filled and sent at once, in a fresh context
   (cold cache) and in a second page of that context (warm cache), in both kinds of
   context, locally and under CDP ``Network.emulateNetworkConditions`` at 20 Mbit/s, 40 ms
   (``--smoke``: local only); the server counts how often it was asked for the files the
   worker keeps in Cache Storage (.wasm, stdlib .zip, .whl: none on a warm load). "As a
   reader asks it": the pointer on the launcher (the boot starts), the panel opened, the
   question typed at 10 characters a second, Enter to answer. Boot and first-question
   samples are interleaved, so the shared machine's load falls on both alike.
3. Size of what the widget adds to every page (docpilot.js + docpilot.css, the 15 KB
   gzip goal; Pyodide excluded), worker.js (loaded when the panel opens) and the inline
   config, raw and gzip levels 9 and 6, as the build wrote them into site/docpilot/.

Median and range over ``--n`` samples (default 7). Work files go to benchmarks/out/bench_browser/.
Run: ``.venv/bin/python benchmarks/bench_browser.py [--n 7] [--no-material] [--smoke]``
"""

from __future__ import annotations

import argparse
import functools
import gzip
import http.server
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import yaml
from playwright.sync_api import (
    Browser,
    BrowserContext,
    Page,
    Playwright,
    ViewportSize,
    sync_playwright,
)
from playwright.sync_api import TimeoutError as PlaywrightTimeout

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests" / "chromium"))
from browsing import file_server  # noqa: E402
from common import tree_state  # noqa: E402
from corpora import EXAMPLE_SITE, MATERIAL, reduced_config  # noqa: E402

OUT = HERE / "out" / "bench_browser"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]
MKDOCS_ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}
GOAL_GZIP_BYTES = 15_000  # "15 KB": widget JS + CSS gzipped, Pyodide excluded
# Longer than the widget's own 60 s silence timeout, so a turn that hangs ends in the
# widget's words ("taking too long"), which the failure then reports.
ANSWER_TIMEOUT_MS = 90_000
LAUNCHER_TIMEOUT_MS = 30_000  # after the page's load event, which waits for the stylesheet
BLANK = "/__bench_blank__.html"  # served by the bench's handler, not part of the site
STRINGS = json.loads((ROOT / "widget" / "i18n" / "en.json").read_text(encoding="utf-8"))
OFF_TOPIC = "How do I bake sourdough bread?"
VIEWPORT: ViewportSize = {"width": 1280, "height": 800}
# CDP Network.emulateNetworkConditions: a reader on a 20 Mbit/s line with 40 ms latency.
THROTTLED = {
    "offline": False,
    "latency": 40,
    "downloadThroughput": 20e6 / 8,
    "uploadThroughput": 20e6 / 8,
}
NETWORKS: dict[str, dict[str, Any] | None] = {"local": None, "20 Mbit/s, 40 ms": THROTTLED}
KEPT = (".wasm", ".zip", ".whl")  # what the worker keeps in Cache Storage
TYPING_DELAY_MS = 100  # a quick typist: 10 characters a second


@dataclass
class Site:
    key: str
    label: str
    site_dir: Path
    page: str  # where the reader opens the widget
    covered: str
    warmup: str  # a first question asked before the "worker booted" samples
    build_seconds: float
    off_topic: str = OFF_TOPIC


# ------------------------------------------------------------------ building


def mkdocs_build(config: Path) -> float:
    began = time.perf_counter()
    done = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "python"), "-m", "mkdocs", "build", "-f", str(config)],
        capture_output=True,
        text=True,
        env=MKDOCS_ENV,
        cwd=config.parent,
    )
    if done.returncode != 0:
        sys.exit(f"mkdocs build of {config} failed:\n{done.stdout}\n{done.stderr}")
    return time.perf_counter() - began


def build_example(work: Path) -> Site:
    """example-site built in static mode (``endpoint: browser``) in ``work``: a folder of
    the calling script's own, since `benchmarks/run --quick` runs scripts side by side and
    a build empties the site folder another script may be serving."""
    work.mkdir(parents=True, exist_ok=True)
    config = yaml.safe_load((EXAMPLE_SITE / "mkdocs.yml").read_text(encoding="utf-8"))
    plugins = []
    for plugin in config["plugins"]:
        if plugin == "docpilot" or (isinstance(plugin, dict) and "docpilot" in plugin):
            options = (plugin["docpilot"] if isinstance(plugin, dict) else None) or {}
            plugin = {
                "docpilot": {
                    **options,
                    "endpoint": "browser",
                    "cache_dir": str(work / "plugin-cache"),
                }
            }
        plugins.append(plugin)
    config.update(plugins=plugins, docs_dir=str(EXAMPLE_SITE / "docs"), site_dir=str(work / "site"))
    path = work / "mkdocs.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True), encoding="utf-8")
    seconds = mkdocs_build(path)
    return Site(
        "example",
        "(a) example-site",
        work / "site",
        "/reference/cli/",
        covered="How do I exclude a page from the assistant?",
        warmup="Can DocPilot run without a server?",
        build_seconds=seconds,
    )


def build_material() -> Site:
    work = OUT / "material"
    shutil.rmtree(work / "site", ignore_errors=True)
    config = reduced_config(
        MATERIAL, work, {"endpoint": "browser", "cache_dir": str(work / "plugin-cache")}
    )
    seconds = mkdocs_build(config)
    return Site(
        "material",
        "(b) Material corpus",
        work / "site",
        "/reference/admonitions/",
        covered="How do I make an admonition collapsible?",
        warmup="How do I add a copy button to code blocks?",
        build_seconds=seconds,
    )


# ------------------------------------------------------------------ serving


class StaticHandler(http.server.SimpleHTTPRequestHandler):
    """What `python -m http.server` does, with the MIME types Pyodide needs; it also
    counts the responses it sends (status per path) and serves a blank page at BLANK."""

    extensions_map: ClassVar[dict[str, str]] = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".wasm": "application/wasm",
        ".mjs": "text/javascript",
        ".js": "text/javascript",
    }
    counts: ClassVar[Counter[tuple[str, int]]] = Counter()
    lock: ClassVar[threading.Lock] = threading.Lock()

    def do_GET(self) -> None:
        if self.path.split("?")[0] == BLANK:
            body = (
                b'<!doctype html><meta charset=utf-8><link rel=icon href="data:,"><title>b</title>'
            )
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        with self.lock:
            self.counts[(self.path.split("?")[0], int(code))] += 1

    def log_message(self, format: str, *args: Any) -> None:
        pass

    @classmethod
    def take_counts(cls) -> Counter[tuple[str, int]]:
        with cls.lock:
            counts = cls.counts.copy()
            cls.counts.clear()
        return counts


# ------------------------------------------------------------------ measuring


@dataclass
class Samples:
    values: dict[str, list[float]] = field(default_factory=dict)
    notes: dict[str, list[str]] = field(default_factory=dict)

    def add(self, name: str, value: float) -> None:
        self.values.setdefault(name, []).append(value)

    def note(self, name: str, text: str) -> None:
        self.notes.setdefault(name, []).append(text)

    loads: list[float] = field(default_factory=list)

    def sample_load(self) -> None:
        self.loads.append(os.getloadavg()[0])

    def load_range(self) -> str:
        return f"{min(self.loads):.1f}–{max(self.loads):.1f}" if self.loads else "?"


@dataclass
class Trouble:
    """Anything that went wrong in a page: console errors, failed requests, other hosts."""

    lines: list[str] = field(default_factory=list)
    fonts: int = 0  # failed Google Fonts requests (expected offline)
    # Material's theme asks Google Fonts for Roboto; offline, that fails on every page.
    expected: ClassVar[tuple[str, ...]] = ("fonts.googleapis.com", "fonts.gstatic.com")

    def add(self, line: str) -> None:
        if not any(host in line for host in self.expected):
            self.lines.append(line)
        else:
            self.fonts += 1

    def report(self) -> None:
        if self.fonts:
            print(
                f"Material's theme asked Google Fonts {self.fonts} times (fails offline; expected)."
            )
        if self.lines:
            print("Trouble seen in the pages:")
            for line, count in Counter(self.lines).most_common():
                print(f"- {line}" + (f" (x{count})" if count > 1 else ""))
        else:
            print("No console errors, failed requests or requests to other hosts.")

    def watch(self, page: Page, where: str) -> None:
        def console(msg: Any) -> None:
            # Failed loads are reported with their URL by the handlers below.
            if msg.type in ("error", "warning") and "Failed to load resource" not in msg.text:
                self.add(f"{where}: console {msg.type}: {msg.text[:300]}")

        page.on("console", console)
        page.on("pageerror", lambda e: self.add(f"{where}: page error: {e}"))
        page.on(
            "response",
            lambda r: self.add(f"{where}: HTTP {r.status}: {r.url}") if r.status >= 400 else None,
        )
        page.on(
            "requestfailed",
            lambda r: self.add(f"{where}: request failed: {r.url} ({r.failure})"),
        )
        page.on(
            "request",
            lambda r: (
                None
                if r.url.startswith(("http://127.0.0.1", "data:", "blob:"))
                else self.add(f"{where}: request to another host: {r.url}")
            ),
        )


BOOT_JS = """
async ([workerUrl]) => {
  const w = new Worker(workerUrl, { type: "module" });
  const post = (message) => new Promise((resolve, reject) => {
    w.onmessage = (e) => (e.data.ok ? resolve(e.data.result) : reject(new Error(e.data.error)));
    w.onerror = (e) => reject(new Error("worker error: " + (e.message || "?")));
    w.postMessage(message);
  });
  try {
    const t0 = performance.now();
    const boot = await post({ id: 1, type: "boot" });
    const t1 = performance.now();
    const load = await post({ id: 2, type: "load" });
    const t2 = performance.now();
    return { bootMs: t1 - t0, workerBootMs: boot.bootMs, version: boot.version,
             loadMs: t2 - t1, workerLoadMs: load.loadMs };
  } finally {
    w.terminate();
  }
}
"""

# Installed before the page's scripts: the Enter that submits, and the final draw.
TIMING_JS = """
window.__bench = { enter: null, done: [] };
document.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && e.target.classList && e.target.classList.contains("dp-input")) {
    window.__bench.enter = performance.now();
  }
}, true);
// The final draw: an answer body gets its data-kind, or the turn's error box appears.
const drawn = (kind, text) => {
  const dom = performance.now();
  const enter = window.__bench.enter;
  requestAnimationFrame(() => window.__bench.done.push({ kind, text, enter, dom, frame: performance.now() }));
};
new MutationObserver((records) => {
  for (const r of records) {
    if (r.type === "attributes" && r.target.matches(".dp-body")) drawn(r.target.dataset.kind, "");
    for (const node of r.addedNodes || []) {
      if (node.nodeType === 1 && node.matches(".dp-error")) drawn("failed", node.textContent);
    }
  }
}).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ["data-kind"] });
"""


MODES = {
    "profile": "a fresh profile with a disk cache (as a reader's browser)",
    "incognito": "a fresh Playwright context (in-memory cache)",
}


@contextmanager
def fresh_context(p: Playwright, browser: Browser, mode: str) -> Iterator[BrowserContext]:
    """An empty HTTP cache: a new incognito-like context of ``browser`` (Playwright's
    default, in-memory cache) or a new Chromium on a new profile directory (disk cache)."""
    profile = None
    if mode == "incognito":
        context = browser.new_context(viewport=VIEWPORT)
    else:
        profile = Path(tempfile.mkdtemp(prefix="profile-", dir=OUT))
        context = p.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True, viewport=VIEWPORT
        )
    context.add_init_script(TIMING_JS)
    context.set_default_timeout(ANSWER_TIMEOUT_MS)
    try:
        yield context
    finally:
        context.close()
        if profile:
            shutil.rmtree(profile, ignore_errors=True)


def measure_boot(
    p: Playwright, browser: Browser, base: str, i: int, samples: Samples, trouble: Trouble
) -> None:
    """Sample ``i``, per cache mode: a cold boot in a new context, then a warm boot in a
    second page of that context."""
    worker_url = f"{base}/docpilot/worker.js"
    for mode in MODES:
        with fresh_context(p, browser, mode) as context:
            for phase in ("cold", "warm"):
                StaticHandler.take_counts()
                samples.sample_load()
                page = context.new_page()
                trouble.watch(page, f"boot {mode} {phase}")
                page.goto(base + BLANK)
                got = page.evaluate(BOOT_JS, [worker_url])
                key = f"{mode} {phase}"
                samples.add(f"boot {key}", got["bootMs"])
                samples.add(f"boot {key} (worker bootMs)", got["workerBootMs"])
                samples.add(f"load index {key}", got["loadMs"])
                counts = StaticHandler.take_counts()
                fresh = sum(v for (path, c), v in counts.items() if c == 200 and path != BLANK)
                revalidated = sum(v for (_, c), v in counts.items() if c == 304)
                samples.note(f"boot {key}", f"{fresh}x200/{revalidated}x304")
                if i == 0 and phase == "warm":
                    listed = ", ".join(
                        f"{Path(path).name} {c}"
                        for (path, c), _ in sorted(counts.items())
                        if path != BLANK
                    )
                    samples.note("requests", f"{mode}: {listed or 'none'}")
                samples.note("version", got["version"])
                page.close()


def open_site_page(
    context: BrowserContext,
    url: str,
    trouble: Trouble,
    where: str,
    network: dict[str, Any] | None = None,
) -> Page:
    page = context.new_page()
    trouble.watch(page, where)
    if network:
        cdp = context.new_cdp_session(page)
        cdp.send("Network.enable")
        cdp.send("Network.emulateNetworkConditions", network)
    page.goto(url)
    try:
        page.locator(".dp-launcher").wait_for(state="visible", timeout=LAUNCHER_TIMEOUT_MS)
    except PlaywrightTimeout:
        # The widget stays hidden until its stylesheet is in: say what the page holds.
        state = page.evaluate(
            "[...document.querySelectorAll('#docpilot.dp, #docpilot.dp link')]"
            ".map((e) => `${e.tagName} hidden=${e.hidden} ${e.href || ''}`)"
        )
        waited = f"no launcher {LAUNCHER_TIMEOUT_MS // 1000} s after the page loaded"
        raise TurnFailed(f"{where}: {waited}; the widget: {state}") from None
    return page


class TurnFailed(Exception):
    """The widget did not appear, drew an error instead of an answer, or drew nothing in
    time."""


T = TypeVar("T")


def twice(trouble: Trouble, measure: Callable[[], T]) -> T:
    """``measure()``; when it fails, the failure is reported (Trouble) and it is measured
    once more, in a new context. A second failure ends the run."""
    try:
        return measure()
    except TurnFailed as failed:
        trouble.add(f"{failed} (measured again in a new context)")
        return measure()


def submit(
    page: Page, where: str, question: str, *, typed: bool = True, delay: float = 0
) -> dict[str, Any]:
    """Type ``question`` into the open panel (``delay`` ms a character), press Enter; wait
    for its final draw. Raises TurnFailed, naming the sample ``where`` and what the panel
    showed, when it is not an answer."""
    page.evaluate("window.__bench.done = []; window.__bench.enter = null")
    box = page.locator(".dp-input")
    if typed:
        box.press_sequentially(question, delay=delay)
    else:
        box.fill(question)
    box.press("Enter")
    try:
        page.wait_for_function("window.__bench.done.length > 0", timeout=ANSWER_TIMEOUT_MS)
    except PlaywrightTimeout:
        shown = page.locator(".dp-turn").last.inner_text(timeout=5_000)
        waited = f"nothing drawn {ANSWER_TIMEOUT_MS // 1000} s after Enter"
        raise TurnFailed(f"{where}: {waited}; the panel: {shown!r}") from None
    done = page.evaluate("window.__bench.done[0]")
    if done["kind"] == "failed":
        raise TurnFailed(f"{where}: the widget said: {done['text']!r}")
    return {"ms": done["frame"] - done["enter"], "dom_ms": done["dom"] - done["enter"], **done}


def measure_booted(
    p: Playwright,
    browser: Browser,
    base: str,
    site: Site,
    n: int,
    samples: Samples,
    trouble: Trouble,
) -> None:
    """Worker already booted: one page, a first question answered, then New chat each time."""

    def one_context() -> list[tuple[str, dict[str, Any]]]:
        """The warm-up and every sample of one fresh context, returned whole or not at all."""
        taken: list[tuple[str, dict[str, Any]]] = []
        with fresh_context(p, browser, "incognito") as context:
            page = open_site_page(context, base + site.page, trouble, "questions")
            page.locator(".dp-launcher").click()
            taken.append(("warm-up", submit(page, "questions: warm-up", site.warmup)))
            new_chat = page.get_by_role("button", name=STRINGS["new_chat"])
            for _ in range(n):
                samples.sample_load()
                for label, question in (("covered", site.covered), ("off-topic", site.off_topic)):
                    new_chat.click()
                    taken.append((label, submit(page, f"questions: {label}", question)))
            page.close()
        return taken

    for label, got in twice(trouble, one_context):
        if label == "warm-up":
            samples.note(label, got["kind"])
            continue
        samples.add(f"ask {label}", got["ms"])
        samples.add(f"ask {label} (DOM written)", got["dom_ms"])
        samples.note(f"ask {label}", got["kind"])


def kept_fetches(counts: Counter[tuple[str, int]]) -> int:
    """How many of the files the worker keeps in Cache Storage the server was asked for
    (or their .gz copies, which the worker fetches from a host that compresses nothing)."""
    return sum(v for (path, _), v in counts.items() if path.removesuffix(".gz").endswith(KEPT))


def measure_first(
    p: Playwright,
    browser: Browser,
    base: str,
    site: Site,
    samples: Samples,
    trouble: Trouble,
    networks: dict[str, dict[str, Any] | None],
    paced: bool = False,
) -> None:
    """One sample of the first question on a fresh page, boot included, per cache mode and
    network: in a new context (cold), then in a second page of that context (warm: the HTTP
    cache and Cache Storage hold Pyodide). By default the launcher is clicked and the
    question sent at once: the worst case, with no time to boot while the reader types.
    ``paced``: as a reader asks it (profile mode only), the pointer reaches the launcher
    (the boot starts), the panel is opened, the question typed at TYPING_DELAY_MS a
    character; Enter to answer is then the wait the reader still feels."""
    kind = "paced" if paced else "first"

    def one_context(mode: str, net: str, network: dict[str, Any] | None) -> list[tuple[str, Any]]:
        """The cold then warm sample of one fresh context, returned whole or not at all."""
        taken: list[tuple[str, Any]] = []
        with fresh_context(p, browser, mode) as context:
            for phase in ("cold", "warm"):
                samples.sample_load()
                StaticHandler.take_counts()
                key = f"{kind} {mode} {net} {phase}"
                page = open_site_page(context, base + site.page, trouble, key, network)
                if paced:
                    page.locator(".dp-launcher").hover()
                page.locator(".dp-launcher").click()
                got = submit(page, key, site.covered, typed=paced, delay=TYPING_DELAY_MS)
                kept = kept_fetches(StaticHandler.take_counts())
                taken.append((key, (got, kept)))
                page.close()
        return taken

    for mode in ("profile",) if paced else MODES:
        for net, network in networks.items():
            taken = twice(trouble, functools.partial(one_context, mode, net, network))
            for key, (got, kept) in taken:
                samples.add(key, got["ms"])
                samples.note("first", got["kind"])
                samples.note(f"kept {key}", str(kept))


# ------------------------------------------------------------------ sizes


Row = tuple[str, int, int, int]  # label, raw, gzip -9, gzip -6


def sizes(site_dir: Path) -> list[Row]:
    """Each file gzipped on its own (as a server sends it); sums are of those sizes."""
    own = site_dir / "docpilot"

    def row(label: str, data: bytes) -> Row:
        return (
            label,
            len(data),
            len(gzip.compress(data, compresslevel=9, mtime=0)),
            len(gzip.compress(data, compresslevel=6, mtime=0)),
        )

    def total(label: str, *rows: Row) -> Row:
        return (label, sum(r[1] for r in rows), sum(r[2] for r in rows), sum(r[3] for r in rows))

    js = row("docpilot.js", (own / "docpilot.js").read_bytes())
    css = row("docpilot.css", (own / "docpilot.css").read_bytes())
    worker = row("worker.js (fetched when the panel opens)", (own / "worker.js").read_bytes())
    html = (site_dir / "index.html").read_text(encoding="utf-8")
    match = re.search(
        r'<script id="docpilot-config" type="application/json">(.*?)</script>', html, re.S
    )
    config = row(
        "inline config in each page (strings included)",
        match.group(1).encode() if match else b"",
    )
    return [
        js,
        css,
        total("docpilot.js + docpilot.css (the 15 KB goal)", js, css),
        worker,
        total("all three", js, css, worker),
        config,
    ]


def other_files(site_dir: Path) -> list[tuple[str, int, int]]:
    """Context only (not in the goal): the static index and the browser runtime."""
    own = site_dir / "docpilot"
    out = []
    for path in sorted([own / "static.json", *(own / "pyodide").iterdir()]):
        if path.is_file():
            data = path.read_bytes()
            out.append(
                (path.relative_to(own).as_posix(), len(data), len(gzip.compress(data, 6, mtime=0)))
            )
    return out


# ------------------------------------------------------------------ report


def stat(values: list[float]) -> str:
    if not values:
        return "–"
    return f"{statistics.median(values):,.0f} ({min(values):,.0f}–{max(values):,.0f})"


def kinds(notes: list[str]) -> str:
    return ", ".join(f"{k} x{v}" for k, v in Counter(notes).items())


def report(
    site: Site, samples: Samples, n: int, networks: dict[str, dict[str, Any] | None]
) -> str:
    notes = samples.notes

    def s(key: str) -> str:
        return stat(samples.values.get(key, []))

    def usual(key: str) -> str:
        return Counter(notes.get(key, ["?"])).most_common(1)[0][0]

    lines = [
        f"### {site.label} ({site.site_dir.relative_to(ROOT)}, mkdocs build "
        f"{site.build_seconds:.1f} s)",
        "",
        f"Pyodide {usual('version')}; ms, median (min–max) of {n}. Cache modes: profile = "
        f"{MODES['profile']}; incognito = {MODES['incognito']}.",
        "",
        "| measurement | cache mode | cold cache | warm cache | notes |",
        "|---|---|---:|---:|---|",
    ]
    for mode in MODES:
        lines.append(
            f"| boot: `new Worker` to `boot` reply | {mode} | {s(f'boot {mode} cold')} "
            f"| {s(f'boot {mode} warm')} | files served per boot: cold "
            f"{usual(f'boot {mode} cold')}, warm {usual(f'boot {mode} warm')} |"
        )
    for mode in MODES:
        lines.append(
            f"| boot as the worker times it (`bootMs`) | {mode} "
            f"| {s(f'boot {mode} cold (worker bootMs)')} | {s(f'boot {mode} warm (worker bootMs)')} "
            "| `start()` to `docpilot_runtime.browser.worker` imported |"
        )
    lines.append(
        f"| load static.json after boot | profile | {s('load index profile cold')} "
        f"| {s('load index profile warm')} | fetch (no-cache) + decode |"
    )
    for mode in MODES:
        for net in networks:
            lines.append(
                f"| first question on a fresh page, Enter to answer, boot included, {net} "
                f"| {mode} | {s(f'first {mode} {net} cold')} | {s(f'first {mode} {net} warm')} "
                f"| sent right after opening the panel; Pyodide files fetched from the server: "
                f"cold {usual(f'kept first {mode} {net} cold')}, "
                f"warm {usual(f'kept first {mode} {net} warm')} "
                "(a warm load takes them from Cache Storage) |"
            )
    for net in networks:
        lines.append(
            f"| first question as a reader asks it (hover, open, type at "
            f"{1000 // TYPING_DELAY_MS} chars/s), Enter to answer, {net} | profile "
            f"| {s(f'paced profile {net} cold')} | {s(f'paced profile {net} warm')} "
            "| the boot starts on hover and runs while the question is typed |"
        )
    for label, question in (("covered", site.covered), ("off-topic", site.off_topic)):
        lines.append(
            f"| worker booted: {label} question, Enter to answer on screen | incognito "
            f'| {s(f"ask {label}")} | | "{question}": {kinds(notes.get(f"ask {label}", []))}; '
            f"DOM written {s(f'ask {label} (DOM written)')} |"
        )
    lines += [
        "",
        "Files served for the first warm boot (name status): "
        + "; ".join(notes.get("requests", [])),
        "",
        f"Load average (1 min) during this site's run: {samples.load_range()}.",
        "",
    ]
    return "\n".join(lines)


def size_report(site: Site) -> str:
    """The widget's files (the same for every site) and the inline config."""
    lines = [
        f"### Widget size (bytes, as built into `{site.site_dir.relative_to(ROOT)}/docpilot/`; "
        "each file gzipped on its own, sums of those)",
        "",
        "| file | raw | gzip -9 | gzip -6 |",
        "|---|---:|---:|---:|",
    ]
    rows = sizes(site.site_dir)
    for label, raw, g9, g6 in rows:
        lines.append(f"| {label} | {raw:,} | {g9:,} | {g6:,} |")
    goal = rows[2]
    verdict = "within" if goal[2] <= GOAL_GZIP_BYTES else "over"
    lines += [
        "",
        f"JS + CSS gzip -9: {goal[2]:,} B against the 15 KB ({GOAL_GZIP_BYTES:,} B) goal: "
        f"{verdict} ({goal[2] - GOAL_GZIP_BYTES:+,} B); gzip -6: {goal[3]:,} B "
        f"({goal[3] - GOAL_GZIP_BYTES:+,} B).",
        "",
    ]
    return "\n".join(lines)


def runtime_files(site: Site) -> str:
    """Static mode's other files (not in the goal): per site, since the index differs."""
    listed = "; ".join(f"`{name}` {raw:,} / {g6:,}" for name, raw, g6 in other_files(site.site_dir))
    return (
        f"{site.label}, static mode's other files in docpilot/ (raw / gzip -6 bytes; "
        f"`python -m http.server` sends them uncompressed): {listed}.\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=7, help="samples per measurement (>= 5)")
    parser.add_argument("--no-material", action="store_true", help="skip the Material corpus")
    parser.add_argument("--smoke", action="store_true", help="example-site, one sample (a smoke)")
    args = parser.parse_args()
    if args.smoke:
        args.n, args.no_material = 1, True
    # The smoke stays quick: local only. A full run adds the throttled network.
    networks: dict[str, dict[str, Any] | None] = {"local": None} if args.smoke else NETWORKS
    OUT.mkdir(parents=True, exist_ok=True)

    sites = [build_example(OUT / "example")]
    print(f"built example-site in {sites[0].build_seconds:.1f} s", flush=True)
    if not args.no_material:
        sites.append(build_material())
        print(f"built the Material corpus in {sites[1].build_seconds:.1f} s", flush=True)

    print(
        f"\n## Browser benchmark on tree {tree_state()}, {time.strftime('%Y-%m-%d')}, "
        f"{os.cpu_count()} CPUs, Chromium {chromium_version()}\n"
    )
    trouble = Trouble()
    try:
        measure_sites(sites, networks, args.n, trouble)
        print(size_report(sites[0]))
        for site in sites:
            print(runtime_files(site))
    finally:  # what the pages showed, also above a traceback
        trouble.report()


def measure_sites(
    sites: list[Site], networks: dict[str, dict[str, Any] | None], n: int, trouble: Trouble
) -> None:
    """Every measurement of each site, ``n`` samples, printed as a report per site."""
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            for site in sites:
                samples = Samples()
                with file_server(site.site_dir, StaticHandler) as base:
                    # Interleaved, so the shared machine's load falls alike on both.
                    for i in range(n):
                        measure_boot(p, browser, base, i, samples, trouble)
                        measure_first(p, browser, base, site, samples, trouble, networks)
                        measure_first(p, browser, base, site, samples, trouble, networks, True)
                    measure_booted(p, browser, base, site, n, samples, trouble)
                print(report(site, samples, n, networks), flush=True)
        finally:
            browser.close()


def chromium_version() -> str:
    done = subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True)
    found = re.search(r"[\d.]{5,}", done.stdout)
    return found.group(0) if found else "?"


if __name__ == "__main__":
    main()
