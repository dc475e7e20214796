"""The reader's wait: where the seconds go between intent and the first answer.

One run, one site (example-site built in static mode), served two ways at once:

* a plain static host (`python -m http.server`'s behaviour: no compression, no cache
  headers; the worker fetches the build's .gz copies and decompresses them itself), in
  static mode: the first answer comes from the sharded index in the worker;
* `docpilot serve` (the runtime: precompressed files, the API): the first answer is the
  credential check in the worker, then the runtime's turn over HTTP.

Per sample, interleaved so the shared machine's load falls alike on all of them:

1. the peer, a page load without Pyodide: a fresh context, the site's page until its
   load event (the reader's wait for any page);
2. per host, a fresh context (cold cache), then a second page in it (warm: HTTP cache
   and Cache Storage, so the memory snapshot the first boot kept): a worker is started
   as the widget starts it, booted, then asked the first question (static: `load` +
   `ask`; server: `check` + POST /api/ask). The worker reports its boot's phases: lock
   file, loader (pyodide.mjs and its wasm script), wasm fetched and compiled with the
   stdlib in place, Python started (or restored from the snapshot), our wheel, our core
   imported, the snapshot taken, Cache Storage written; then the index and the turn;
3. typing while the worker boots: a key pressed in a text box on the page every 50 ms
   during a cold boot, each until its next frame (main-thread responsiveness).

Prints medians (ms), each as a ratio to the page load without Pyodide, with the 1-minute
load average of the run; writes ``benchmarks/out/bench_wait/results.json``.
Run: ``.venv/bin/python benchmarks/bench_wait.py [--n 5] [--smoke]`` (``--smoke``: one sample)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "chromium"))
from bench_browser import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    StaticHandler,
    build_example,
    chromium_version,
)
from browsing import file_server  # noqa: E402
from common import tree_state  # noqa: E402
from docpilot_runtime.api import create_app  # noqa: E402
from docpilot_runtime.settings.load import Settings  # noqa: E402
from servers.runtime import serve_app  # noqa: E402

OUT = HERE / "out" / "bench_wait"
QUESTION = "How do I exclude a page from the assistant?"
PHASES = ("lock", "loader", "wasmAndStdlib", "python", "wheel", "core", "snapshot", "stored")

FIRST_JS = """
async ([mode, question]) => {
  const t0 = performance.now();
  const w = new Worker("/docpilot/worker.js", { type: "module" });
  let id = 0;
  const post = (m) => new Promise((ok, bad) => {
    const my = ++id;
    w.onmessage = (e) => (e.data.id === my ? (e.data.ok ? ok(e.data.result) : bad(new Error(e.data.error))) : 0);
    w.postMessage({ ...m, id: my });
  });
  try {
    const boot = await post({ type: "boot" });
    const t1 = performance.now();
    let index = 0, kind;
    if (mode === "static") {
      await post({ type: "load" });
      index = performance.now() - t1;
      kind = (await post({ type: "ask", request: { question } })).kind;
    } else {
      await post({ type: "check", question });
      const r = await fetch("/api/ask", { method: "POST", headers: { "Content-Type": "application/json" },
                                         body: JSON.stringify({ question }) });
      kind = (await r.json()).kind;
    }
    const t2 = performance.now();
    return { total: t2 - t0, boot: t1 - t0, index, turn: t2 - t1 - index, kind,
             snapshot: boot.snapshot, phases: boot.phases, fetched: boot.fetched };
  } finally {
    w.terminate();
  }
}
"""

TYPING_JS = """
async () => {
  const box = document.createElement("textarea");
  document.body.append(box);
  box.focus();
  const w = new Worker("/docpilot/worker.js", { type: "module" });
  const booted = new Promise((ok) => (w.onmessage = ok));
  w.postMessage({ id: 1, type: "boot" });
  const delays = [];
  let done = false;
  booted.then(() => (done = true));
  while (!done && delays.length < 400) {
    const t = performance.now();
    box.dispatchEvent(new KeyboardEvent("keydown", { key: "a" }));
    box.value += "a";
    await new Promise((ok) => requestAnimationFrame(() => ok()));
    delays.push(performance.now() - t);
    await new Promise((ok) => setTimeout(ok, 50));
  }
  w.terminate();
  delays.sort((a, b) => a - b);
  return { n: delays.length, p50: delays[Math.floor(delays.length / 2)],
           p95: delays[Math.floor(delays.length * 0.95)], max: delays[delays.length - 1] };
}
"""


def med(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def page_load(browser: Any, base: str, path: str) -> float:
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(base + path)
        return float(page.evaluate(
            "performance.getEntriesByType('navigation')[0].loadEventEnd"))
    finally:
        context.close()


def first_answers(browser: Any, base: str, mode: str, path: str) -> list[dict[str, Any]]:
    """Cold (a fresh context), then warm (a second page of it)."""
    context = browser.new_context()
    try:
        out = []
        for _ in ("cold", "warm"):
            page = context.new_page()
            page.goto(base + path)
            out.append(page.evaluate(FIRST_JS, [mode, QUESTION]))
            page.close()
        return out
    finally:
        context.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=5, help="samples of each")
    parser.add_argument("--smoke", action="store_true", help="one sample (a smoke)")
    args = parser.parse_args()
    if args.smoke:
        args.n = 1
    from playwright.sync_api import sync_playwright

    OUT.mkdir(parents=True, exist_ok=True)
    site = build_example(OUT / "example")
    loads: list[float] = [os.getloadavg()[0]]
    samples: dict[str, list[Any]] = {"page load": [], "typing": []}
    for key in ("static cold", "static warm", "server cold", "server warm"):
        samples[key] = []
    app = create_app(site.site_dir, Settings())
    with (
        file_server(site.site_dir, StaticHandler) as static_base,
        serve_app(app) as running,
        sync_playwright() as p,
    ):
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for _ in range(args.n):
                loads.append(os.getloadavg()[0])
                samples["page load"].append(page_load(browser, static_base, site.page))
                for mode, base in (("static", static_base), ("server", running.base_url)):
                    cold, warm = first_answers(browser, base, mode, site.page)
                    samples[f"{mode} cold"].append(cold)
                    samples[f"{mode} warm"].append(warm)
                context = browser.new_context()
                page = context.new_page()
                page.goto(static_base + site.page)
                samples["typing"].append(page.evaluate(TYPING_JS))
                context.close()
        finally:
            browser.close()
    loads.append(os.getloadavg()[0])
    baseline = med(samples["page load"])
    print(f"## bench_wait on tree {tree_state()}, {time.strftime('%Y-%m-%d %H:%M')}, "
          f"Chromium {chromium_version()}, {args.n} samples; load average (1 min) "
          f"{min(loads):.1f}-{max(loads):.1f}\n")
    print(f"Peer: the page load without Pyodide (fresh context, to its load event): "
          f"median {baseline:,.0f} ms.\n")
    print("| ms from `new Worker`, median (x the page load) | " + " | ".join(
        k for k in samples if k not in ("page load", "typing")) + " |")
    print("|---|" + "---:|" * 4)

    def cell(key: str, pick: Any) -> str:
        values = [v for v in (pick(s) for s in samples[key]) if v is not None]
        if not values:
            return "–"
        m = med(values)
        return f"{m:,.0f} ({m / baseline:.1f}x)"

    keys = ["static cold", "static warm", "server cold", "server warm"]
    for phase in PHASES:
        print(f"| boot: {phase} | " + " | ".join(
            cell(k, lambda s, ph=phase: s["phases"].get(ph)) for k in keys) + " |")
    for name, field in (("boot total", "boot"), ("index (static: the manifest)", "index"),
                        ("the turn (static: shards + answer; server: check + HTTP)", "turn"),
                        ("**first answer**", "total")):
        print(f"| {name} | " + " | ".join(cell(k, lambda s, f=field: s[f]) for k in keys) + " |")
    restored = {k: sum(bool(s["snapshot"]) for s in samples[k]) for k in keys}
    print(f"\nRestored from the memory snapshot: {restored} (of {args.n} each).")
    fetched = {k: sum(f["bytes"] for f in samples[k][0]["fetched"]) for k in keys}
    print(f"Bytes the first sample's worker fetched over the network (transferSize): {fetched}.")
    typing = samples["typing"]
    print(f"Typing while a cold boot runs: keydown to next frame p50 "
          f"{med([t['p50'] for t in typing]):.0f} ms, p95 {med([t['p95'] for t in typing]):.0f} "
          f"ms, max {max(t['max'] for t in typing):.0f} ms ({typing[0]['n']} keys a sample).")
    (OUT / "results.json").write_text(json.dumps(
        {"tree": tree_state(), "loads": loads, "samples": samples}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
