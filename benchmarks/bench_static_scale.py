"""Static mode at scale: DocPilot's sharded index against its whole file and against Pagefind.

One run, one site: the synthetic site (``synthetic_site.py``) cut at the first pages that
hold ``--units`` units (10,000 by default), written as HTML. On it:

1. Index build, interleaved ``--n`` times each: DocPilot's index (``index_site`` with no
   embedder, as static mode reads it, plus the static files: ``static.json`` and the
   sharded ``static/``) against Pagefind's CLI (PyPI ``pagefind[bin]``) indexing the same
   HTML. Median seconds and their ratio.
2. Bytes of the index a reader's first question fetches, per question (questions made
   from the site's own section titles, plus off-topic ones), cold cache: DocPilot's
   sharded path (the manifest, then the files the turn names: the same code the worker
   runs, in this process) against the whole ``static.json``, and Pagefind's search for the
   same words with the first five results' fragments loaded (``pagefind.js`` in headless
   Chromium over a loopback static server, which counts the files asked for). Bytes as
   a plain static server sends them (files as they are) and with gzip (each file's .gz
   copy; Pagefind's files are compressed already and count as they are).
3. Time from question to results in the same Chromium, interleaved per question: Pagefind
   (``search`` + five ``data()``) against DocPilot's worker (``load`` of the manifest and
   ``ask``, the HTTP cache disabled, Pyodide booted beforehand and not counted: its boot is
   ``bench_wait.py``'s).

Prints the tables (markdown) and the 1-minute load average at start and end; writes the
figures to ``benchmarks/out/bench_static_scale/results.json``.
Run: ``.venv/bin/python benchmarks/bench_static_scale.py [--units 10000] [--n 3] [--questions 20]``
(``--smoke``: 300 units, one build of each, four questions).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests" / "chromium"))
from common import tree_state  # noqa: E402
from docpilot_runtime.browser import worker  # noqa: E402
from docpilot_runtime.browser.install import (  # noqa: E402
    install_browser_runtime,
    write_sharded_index,
    write_static_index,
)
from docpilot_runtime.bundle.schema import BUNDLE_DIR  # noqa: E402
from docpilot_runtime.bundle.shards import MANIFEST_NAME, SHARDS_DIR  # noqa: E402
from docpilot_runtime.index.build import collect_pages, index_site  # noqa: E402
from docpilot_runtime.settings.index import IndexOptions, embedder_spec  # noqa: E402
from synthetic_site import write_synthetic_site  # noqa: E402

OUT = HERE / "out" / "bench_static_scale"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu",
                 "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]
OFF_TOPIC = ["How do I bake sourdough bread?", "What is the capital of Peru?"]


def load() -> float:
    return os.getloadavg()[0]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


# ------------------------------------------------------------------ the site


def write_site(site: Path, units: int) -> int:
    """The synthetic site's first pages holding ``units`` units; returns the page count."""
    from docpilot_runtime.index.html_sections import parse_page
    from docpilot_runtime.index.units import page_units

    shutil.rmtree(site, ignore_errors=True)
    paths = write_synthetic_site(site, max(50, units // 3))
    total = 0
    for count, path in enumerate(paths, start=1):
        parsed = parse_page(path.read_bytes(), str(path))
        total += len(page_units(parsed, "/", count))
        if total >= units:
            for extra in paths[count:]:
                extra.unlink()
            return count
    raise SystemExit(f"{len(paths)} synthetic pages hold only {total} units")


def docpilot_index(site: Path, cache: Path) -> Any:
    shutil.rmtree(cache, ignore_errors=True)
    options = IndexOptions(embedder=embedder_spec("none", "bench"), cache_dir=str(cache))
    bundle = index_site(site, options, pages=collect_pages(site)).bundle
    write_static_index(site, bundle)
    write_sharded_index(site, bundle)
    return bundle


def pagefind_index(site: Path) -> None:
    shutil.rmtree(site / "pagefind", ignore_errors=True)
    done = subprocess.run(
        [sys.executable, "-m", "pagefind", "--site", str(site), "--root-selector", "article"],
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise SystemExit(f"pagefind failed:\n{done.stdout}\n{done.stderr}")


def timed(fn: Callable[[], object]) -> float:
    began = time.perf_counter()
    fn()
    return time.perf_counter() - began


# ------------------------------------------------------------------ questions and bytes


def questions(bundle: Any, count: int) -> list[str]:
    """Section titles turned into questions (deterministic), and off-topic ones."""
    rng = random.Random(26)
    rows = rng.sample(range(len(bundle.units)), count - len(OFF_TOPIC))
    return [f"How do I use {bundle.units[r].title.lower()}?" for r in rows] + OFF_TOPIC


def docpilot_files(static: Path, question: str) -> list[str]:
    """The files a fresh reader's first question fetches: the manifest, then each round's."""
    worker.load_manifest((static / MANIFEST_NAME).read_bytes())
    names = [MANIFEST_NAME]
    for _ in range(8):
        got = json.loads(worker.ask_sharded(json.dumps({"question": question})))
        if "need" not in got:
            return names
        for name in got["need"]:
            worker.add_file(name, (static / name).read_bytes())
            names.append(name)
    raise RuntimeError(f"still asking for files: {question}")


def sizes(root: Path, names: list[str]) -> tuple[int, int]:
    """(plain, gzip) bytes of ``names`` under ``root``: the file, or its .gz copy when
    there is one (a host that compresses), else the file."""
    plain = sum((root / n).stat().st_size for n in names)
    packed = 0
    for n in names:
        gz = root / f"{n}.gz"
        packed += (gz if gz.is_file() else root / n).stat().st_size
    return plain, packed


# ------------------------------------------------------------------ the browser

PAGEFIND_JS = """
async (q) => {
  const t0 = performance.now();
  const pagefind = await import("/pagefind/pagefind.js");
  const search = await pagefind.search(q);
  const data = await Promise.all(search.results.slice(0, 5).map((r) => r.data()));
  return { ms: performance.now() - t0, results: search.results.length, first: data[0]?.url };
}
"""

WORKER_JS = """
async ([q, boot]) => {
  window.__w ||= new Worker("/docpilot/worker.js", { type: "module" });
  const w = window.__w;
  let id = (window.__id ||= 0);
  const post = (m) => new Promise((ok, bad) => {
    const my = ++id; window.__id = id;
    w.onmessage = (e) => (e.data.id === my ? (e.data.ok ? ok(e.data.result) : bad(new Error(e.data.error))) : 0);
    w.postMessage({ ...m, id: my });
  });
  if (boot) { await post({ type: "boot" }); return {}; }
  const t0 = performance.now();
  await post({ type: "load" });
  const result = await post({ type: "ask", request: { question: q } });
  const ms = performance.now() - t0;
  const stats = await post({ type: "stats" });
  return { ms, kind: result.kind, bytes: stats.indexBytes, sharded: stats.sharded };
}
"""


def browser_times(site: Path, asked: list[str]) -> dict[str, Any]:
    """Pagefind and DocPilot's worker per question, interleaved, in one Chromium."""
    from browsing import file_server
    from playwright.sync_api import sync_playwright

    requested: dict[str, list[str]] = {}
    times: dict[str, list[float]] = {"pagefind": [], "docpilot": []}
    with file_server(site) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            docpilot = browser.new_page()
            cdp = docpilot.context.new_cdp_session(docpilot)
            cdp.send("Network.enable")
            cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})
            docpilot.goto(base + "/index.html")
            docpilot.evaluate(WORKER_JS, ["", True])  # boot: not counted
            for q in asked:
                context = browser.new_context()  # Pagefind: a fresh reader, cold cache
                page = context.new_page()
                urls: list[str] = []
                page.on("request", lambda r, urls=urls: urls.append(r.url.removeprefix(base)))
                page.goto(base + "/index.html")
                got = page.evaluate(PAGEFIND_JS, q)
                times["pagefind"].append(got["ms"])
                requested[q] = [u.split("?")[0] for u in urls if u.startswith("/pagefind/")]
                context.close()
                got = docpilot.evaluate(WORKER_JS, [q, False])
                times["docpilot"].append(got["ms"])
        finally:
            browser.close()
    return {"times": times, "pagefind_files": requested}


# ------------------------------------------------------------------ main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--units", type=int, default=10_000)
    parser.add_argument("--n", type=int, default=3, help="index builds of each, interleaved")
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--no-browser", action="store_true", help="skip Pagefind's side")
    parser.add_argument("--smoke", action="store_true", help="a small site, once (a smoke)")
    args = parser.parse_args()
    if args.smoke:
        args.units, args.n, args.questions = 300, 1, 4
    OUT.mkdir(parents=True, exist_ok=True)
    site = OUT / "site"
    load_start = load()
    pages = write_site(site, args.units)

    build: dict[str, list[float]] = {"docpilot": [], "pagefind": []}
    bundle = None
    for _ in range(args.n):
        began = time.perf_counter()
        bundle = docpilot_index(site, OUT / "cache")
        build["docpilot"].append(time.perf_counter() - began)
        if not args.no_browser:
            build["pagefind"].append(timed(lambda: pagefind_index(site)))
    assert bundle is not None
    install_browser_runtime(site, bundle=bundle)
    shutil.copy(ROOT / "widget" / "worker.js", site / BUNDLE_DIR / "worker.js")
    (site / "index.html").write_text("<!doctype html><title>bench</title>", encoding="utf-8")

    static = site / BUNDLE_DIR / SHARDS_DIR
    whole = site / BUNDLE_DIR / "static.json"
    whole_sizes = sizes(whole.parent, [whole.name])
    asked = questions(bundle, args.questions)
    per_question = []
    for q in asked:
        plain, packed = sizes(static, docpilot_files(static, q))
        per_question.append({"question": q, "docpilot": [plain, packed]})
    browser: dict[str, Any] = {}
    if not args.no_browser:
        browser = browser_times(site, asked)
        for row in per_question:
            files = browser["pagefind_files"][row["question"]]
            row["pagefind"] = sum((site / f.lstrip("/")).stat().st_size for f in files)
    load_end = load()

    units = len(bundle.units)
    dp_plain = [r["docpilot"][0] for r in per_question]
    dp_gz = [r["docpilot"][1] for r in per_question]
    print(f"## bench_static_scale on tree {tree_state()}, {time.strftime('%Y-%m-%d %H:%M')}: "
          f"{units:,} units on {pages:,} synthetic pages, {args.questions} first questions; "
          f"load average (1 min) {load_start:.1f} at start, {load_end:.1f} at end\n")
    print("| measure | DocPilot | peer | ratio |")
    print("|---|---:|---:|---:|")
    if build["pagefind"]:
        d, p = median(build["docpilot"]), median(build["pagefind"])
        print(f"| index build, median of {args.n} (s) | {d:.1f} | Pagefind {p:.1f} | {d / p:.2f}x |")
    print(f"| first question's index bytes, plain host, median (max) | {median(dp_plain):,.0f} "
          f"({max(dp_plain):,}) | whole static.json {whole_sizes[0]:,} | "
          f"{median(dp_plain) / whole_sizes[0]:.3f}x |")
    print(f"| the same, gzip host | {median(dp_gz):,.0f} ({max(dp_gz):,}) | whole static.json "
          f"{whole_sizes[1]:,} | {median(dp_gz) / whole_sizes[1]:.3f}x |")
    if browser:
        pf = [r["pagefind"] for r in per_question]
        print(f"| the same, plain host, against Pagefind (search + 5 fragments) | "
              f"{median(dp_plain):,.0f} | Pagefind {median(pf):,.0f} | "
              f"{median(dp_plain) / median(pf):.2f}x |")
        d, p = median(browser["times"]["docpilot"]), median(browser["times"]["pagefind"])
        print(f"| question to results in Chromium, loopback, cold HTTP cache (ms, median) | "
              f"{d:,.0f} | Pagefind {p:,.0f} | {d / p:.2f}x |")
    goal = max(dp_plain) <= 1_000_000
    print(f"\nGoal: the first question fetches <= 1 MB of DocPilot's index: "
          f"{'met' if goal else 'not met'} (largest {max(dp_plain):,} B plain).")
    (OUT / "results.json").write_text(json.dumps({
        "tree": tree_state(), "units": units, "pages": pages, "load": [load_start, load_end],
        "build": build, "whole": whole_sizes, "questions": per_question,
        "browser_ms": browser.get("times", {}),
    }, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
