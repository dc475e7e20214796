"""How much validating a long answer delays other requests on a running runtime.

A real `docpilot serve` process (lexical mode, over a small generated site) answers one
question through the scripted Anthropic stand-in (tests/servers), which streams a
50,000-character answer; meanwhile this script polls `GET /api/health` back to back and
reports how much slower those health checks were than at rest. Validation runs off the
event loop, so the delay should stay in the low milliseconds (goal: under 50 ms).

    .venv/bin/python benchmarks/bench_validate.py [--chars 50000] [--quick | --smoke]
"""

from __future__ import annotations

import argparse
import asyncio
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
from docpilot_runtime.embedders.base import EmbedderSpec  # noqa: E402
from docpilot_runtime.index.build import index_site  # noqa: E402
from docpilot_runtime.index.options import IndexOptions  # noqa: E402
from docpilot_runtime.turn import load_runtime  # noqa: E402
from docpilot_runtime.types import AskRequest  # noqa: E402
from servers.anthropic_messages import AnthropicServer, answer_reply  # noqa: E402

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
    sentence = f"Set the *cache* with `cache_dir` [[{cite}]] and see [the page](/page1/#cache). "
    text, n = "", 0
    while len(text) < chars:
        text += sentence
        n += 1
        if not one_paragraph and n % 8 == 0:
            text += "\n\n"
    return text[:chars]


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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


if __name__ == "__main__":
    main()
