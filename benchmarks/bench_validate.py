"""How much validating a long answer delays other requests on a running runtime.

A real `docpilot serve` process (lexical mode, over a small generated site) answers one
question through the scripted Anthropic stand-in (tests/servers), which streams a
50,000-character answer; meanwhile this script polls `GET /api/health` back to back and
reports how much slower those health checks were than at rest. Validation runs off the
event loop, so the delay should stay in the low milliseconds (goal: under 50 ms).

A second table reads what a loaded machine cannot blur: the CPU time (``time.thread_time``)
of each piece of work the turn does per 20-character chunk of the same answers, in this
process: the validator's ``feed`` (run in a worker thread, so the event loop waits for it
at most while that thread holds the GIL) and the answer field's decoding (run on the event
loop), and the closing ``finish``.

    .venv/bin/python benchmarks/bench_validate.py [--chars 50000] [--quick | --smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(HERE))
from common import tree_state  # noqa: E402
from docpilot_runtime.answer.stream import JsonStringField as MarkdownField  # noqa: E402
from docpilot_runtime.bundle.read import load_bundle  # noqa: E402
from docpilot_runtime.check.citations import Source  # noqa: E402
from docpilot_runtime.check.validate import StreamValidator  # noqa: E402
from docpilot_runtime.index.build import index_site  # noqa: E402
from docpilot_runtime.settings.embedder import EmbedderSpec  # noqa: E402
from docpilot_runtime.settings.index import IndexOptions  # noqa: E402
from docpilot_runtime.shared.types import AskRequest  # noqa: E402
from docpilot_runtime.turn import load_runtime  # noqa: E402
from servers.anthropic_messages import AnthropicServer, answer_reply  # noqa: E402
from servers.processes import free_port  # noqa: E402

QUESTION = "How do I configure the cache directory?"
PAGE = """<!doctype html><html><head><title>{title} - Bench Docs</title></head><body>
<main><h1 id="top">{title}</h1><p>{title} explains the cache directory and its options.</p>
<h2 id="cache">Cache directory</h2><p>Set the cache directory with the cache_dir option;
the cache directory keeps embeddings between builds of {title}.</p>
<h2 id="other">Other</h2><p>Unrelated text about {title} and its many settings.</p></main>
</body></html>"""


def make_site(root: Path) -> Path:
    site = root / "site"
    for i in range(12):
        page = site / f"page{i}"
        page.mkdir(parents=True)
        (page / "index.html").write_text(PAGE.format(title=f"Page {i}"), encoding="utf-8")
    index_site(
        site, IndexOptions(embedder=EmbedderSpec(name="none"), cache_dir=str(root / "cache"))
    )
    return site


def cited_id(site: Path) -> str:
    """An id the runtime hands the model first for QUESTION (its best unit)."""
    runtime = load_runtime(site)
    result = asyncio.run(runtime.ask(AskRequest(QUESTION)))
    return result.ranked[0]


def long_answer(cite: str, chars: int, one_paragraph: bool) -> str:
    # A numbered run: no six words repeat (the ladder refuses a reply that loops).
    sentence = (
        "Build {n} sets the *cache directory* {n} with the `cache_dir` option {n} [[" + cite + "]]; "
        "the cache directory keeps {n} embeddings between [builds](/page1/#cache). "
    )
    text, n = "", 0
    while len(text) < chars:
        n += 1
        text += sentence.format(n=n)
        if not one_paragraph and n % 8 == 0:
            text += "\n\n"
    return text[:chars]




def health_latencies(
    client: httpx.Client, base: str, until: threading.Event | None, n: int
) -> list[float]:
    """Back-to-back /api/health round trips (ms): ``n`` of them, or until ``until`` is set."""
    out = []
    while (until is None and len(out) < n) or (until is not None and not until.is_set()):
        start = time.perf_counter()
        client.get(f"{base}/api/health").raise_for_status()
        out.append((time.perf_counter() - start) * 1000)
    return out


def measure(base: str, server: AnthropicServer, answer: str) -> dict[str, float]:
    server.script(answer_reply(markdown=answer, confidence=90))
    done = threading.Event()
    outcome: dict[str, object] = {}

    def ask() -> None:
        start = time.perf_counter()
        with httpx.Client(timeout=120) as c:
            r = c.post(f"{base}/api/ask", json={"question": QUESTION})
        outcome["seconds"] = time.perf_counter() - start
        outcome["result"] = r.json()
        done.set()

    with httpx.Client(timeout=30) as client:
        rest = health_latencies(client, base, None, 200)
        thread = threading.Thread(target=ask)
        thread.start()
        during = health_latencies(client, base, done, 0)
        thread.join()
    result = outcome["result"]
    assert isinstance(result, dict) and result["kind"] == "answer", result
    baseline = statistics.median(rest)
    return {
        "markdown_chars": float(len(result["markdown"])),
        "turn_s": float(outcome["seconds"]),  # type: ignore[arg-type]
        "health_rest_ms": baseline,
        "health_rest_max_ms": max(rest),
        "health_p95_ms": statistics.quantiles(during, n=20)[-1],
        "health_checks_during": float(len(during)),
        "health_p50_ms": statistics.median(during),
        "health_max_ms": max(during),
        "delay_max_ms": max(during) - baseline,
    }


def slices(site: Path, cite: str, answer: str) -> dict[str, float]:
    """CPU time (ms) of the per-chunk work of one streamed answer, as the turn does it."""
    bundle = load_bundle(site)
    unit = next(u for u in bundle.units if u.id == cite)
    stream = StreamValidator({cite: Source(cite, unit.url, unit.title)}, bundle.pages, len(answer))
    field_ = MarkdownField()
    raw = json.dumps({"markdown": answer})
    worker, loop = [], []
    for i in range(0, len(raw), 20):
        start = time.thread_time()
        piece = field_.feed(raw[i : i + 20])
        loop.append((time.thread_time() - start) * 1000)
        start = time.thread_time()
        stream.feed(piece)
        worker.append((time.thread_time() - start) * 1000)
    start = time.thread_time()
    stream.finish()
    finish = (time.thread_time() - start) * 1000
    worker.sort()
    return {
        "chunks": len(worker),
        "worker_p50": worker[len(worker) // 2],
        "worker_p999": worker[int(len(worker) * 0.999)],
        "worker_max": worker[-1],
        "worker_total_s": sum(worker) / 1000,
        "loop_max": max(loop),
        "finish": finish,
    }


def slice_row(label: str, cut: dict[str, float]) -> list[str]:
    return [
        label,
        f"{cut['chunks']:,.0f}",
        f"{cut['worker_p50']:.3f} / {cut['worker_p999']:.2f} / {cut['worker_max']:.2f}",
        f"{cut['worker_total_s']:.2f}",
        f"{cut['loop_max']:.3f}",
        f"{cut['finish']:.2f}",
    ]


def print_table(header: list[str], rows: list[list[str]]) -> None:
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chars", type=int, default=50_000)
    parser.add_argument("--quick", action="store_true", help="a 5,000-character answer")
    parser.add_argument("--smoke", action="store_true", help="a 2,000-character answer (a smoke)")
    args = parser.parse_args()
    chars = 2_000 if args.smoke else 5_000 if args.quick else args.chars
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        site = make_site(root)
        cite = cited_id(site)
        with AnthropicServer(chunk_chars=20) as server:
            config = root / "docpilot.toml"
            config.write_text(
                '[[providers]]\nkind = "anthropic"\n'
                f'base_url = "{server.base_url}"\nmodel = "bench-model"\ntimeout = 120\n'
                f"[answer]\nmax_answer_chars = {chars + 1000}\n",
                encoding="utf-8",
            )
            port = free_port()
            env = {**os.environ, "ANTHROPIC_API_KEY": "bench-not-a-key"}
            serve = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "docpilot_runtime.cli",
                    "serve",
                    str(site),
                    "--port",
                    str(port),
                    "--config",
                    str(config),
                ],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            base = f"http://127.0.0.1:{port}"
            try:
                deadline = time.time() + 60
                while True:
                    try:
                        httpx.get(f"{base}/api/health", timeout=1).raise_for_status()
                        break
                    except httpx.HTTPError:
                        if time.time() > deadline or serve.poll() is not None:
                            raise SystemExit("the runtime did not start") from None
                        time.sleep(0.2)
                print(
                    f"# bench_validate  {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  tree {tree_state()}"
                    f"  load {os.getloadavg()[0]:.2f}"
                )
                print(
                    "| answer | chars kept | turn s | health at rest: p50 / max ms | checks during | p50 ms"
                    " | p95 ms | max ms | delay (max - rest p50) ms |"
                )
                print("|---|---|---|---|---|---|---|---|---|")
                for label, one in (("paragraphs", False), ("one paragraph", True)):
                    row = measure(base, server, long_answer(cite, chars, one))
                    print(
                        f"| {chars:,} chars, {label} | {row['markdown_chars']:,.0f} | {row['turn_s']:.2f} |"
                        f" {row['health_rest_ms']:.1f} / {row['health_rest_max_ms']:.1f} |"
                        f" {row['health_checks_during']:.0f} | {row['health_p50_ms']:.1f} |"
                        f" {row['health_p95_ms']:.1f} | {row['health_max_ms']:.1f} | {row['delay_max_ms']:.1f} |"
                    )
            finally:
                serve.terminate()
                serve.wait(timeout=30)
        print()
        print_table(
            [
                "answer",
                "chunks",
                "validator feed CPU per chunk: p50 / p99.9 / max ms",
                "feed total s",
                "on the event loop, max per chunk ms",
                "finish ms",
            ],
            [
                slice_row(f"{chars:,} chars, {label}", slices(site, cite, long_answer(cite, chars, one)))
                for label, one in (("paragraphs", False), ("one paragraph", True))
            ],
        )

if __name__ == "__main__":
    main()
