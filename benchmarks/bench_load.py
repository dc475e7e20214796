"""The runtime under load: concurrent streaming readers against a slow scripted provider,
then a soak for memory.

`docpilot serve` runs as its own process (so its RSS is its own), with records on
(SQLite), the caps raised and shared through the database (so they are exercised), and
one OpenAI-compatible provider: the tests' scripted server in this process, waiting
``--delay`` seconds (default 0.2) before each reply. Readers are asyncio tasks streaming
`POST /api/ask` as Server-Sent Events; each asks again as soon as its answer arrives.

- load: ``--turns`` turns (default 1,000) from ``--readers`` readers (default 200):
  turns/s, gate latency (request to the `retrieval` progress event) and turn latency
  (to the `answer` event) at p50/p99, errors;
- soak: ``--soak`` more turns (default 10,000): the runtime's RSS before and after;
- records lost: turns answered minus turn records in the database once the runtime
  has stopped (its shutdown drains the spool).

The site is example-site (built here); ``--smoke`` uses a three-page site, 60 + 120
turns and 10 readers. Run: ``.venv/bin/python benchmarks/bench_load.py [--smoke]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(HERE))
from common import tree_state  # noqa: E402
from corpora import EXAMPLE_SITE, mkdocs_build  # noqa: E402
from docpilot_runtime.bundle.read import load_bundle  # noqa: E402
from docpilot_runtime.records import open_store  # noqa: E402
from load_driver import LoadSummary, SlowChat, run_load, summarise  # noqa: E402
from servers.openai_chat import answer_reply  # noqa: E402
from servers.processes import ServeProcess  # noqa: E402
from small_site import CACHE, INSTALL, INSTALL_QUESTION, PROXY, build_small_site  # noqa: E402

EXAMPLE_QUESTION = "How do I exclude a page from the assistant?"


def rss_mb(pid: int) -> float:
    """Resident set size of a process, from /proc (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def config_for(
    folder: Path, model: SlowChat, max_connections: int,
    # Every reader comes from 127.0.0.1: no cap on connections per client; a loaded client
    # may take over 10 s to reuse its connection: a longer idle time.
    limits: str = "max_connections_per_client = 0\nrequest_head_seconds = 60\nshared = true\n",
    extra: str = "",
) -> Path:
    """The runtime's settings: records in ``folder``, rate caps raised, room for
    ``max_connections`` API requests, ``limits`` and ``extra`` lines, the scripted provider."""
    config = folder / "docpilot.toml"
    config.write_text(
        f"[records]\npath = {json.dumps(str(folder / 'records.sqlite3'))}\n"
        "[limits]\nanswers_per_minute = 1000000\nanswers_per_minute_per_client = 1000000\n"
        f"max_connections = {max_connections}\n{limits}{extra}"
        f'[[providers]]\nkind = "openai"\nbase_url = "{model.base_url}"\n'
        'model = "gpt-4o-mini"\nretries = 0\nconnect_timeout = 60\n'
        "first_token_timeout = 120\nidle_timeout = 120\ntimeout = 120\n",
        encoding="utf-8",
    )
    return config


def phase(base_url: str, turns: int, readers: int, question: str) -> tuple[LoadSummary, set[str]]:
    started = time.perf_counter()
    outcomes = asyncio.run(run_load(base_url, turns, readers, question))
    summary = summarise(outcomes, time.perf_counter() - started)
    return summary, {o.turn_id for o in outcomes if o.ok}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--readers", type=int, default=200)
    parser.add_argument("--soak", type=int, default=10_000)
    parser.add_argument("--delay", type=float, default=0.2, help="provider seconds per reply")
    parser.add_argument("--smoke", action="store_true", help="a small site, 60 + 120 turns")
    args = parser.parse_args()
    if args.smoke:
        args.turns, args.readers, args.soak = 60, 10, 120
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        site = folder / "site"
        if args.smoke:
            build_small_site(site, folder / "cache", [INSTALL, CACHE, PROXY])
            question, corpus = INSTALL_QUESTION, "a three-page site"
        else:
            mkdocs_build(EXAMPLE_SITE / "mkdocs.yml", "--site-dir", str(site))
            question, corpus = EXAMPLE_QUESTION, "example-site"
        bundle = load_bundle(site)
        cited = bundle.units[0].id
        total = args.turns + args.soak
        steps = [answer_reply(markdown=f"See the docs [[{cited}]].")] * total
        with SlowChat(steps, delay=args.delay) as model:
            config = config_for(folder, model, args.readers * 2)
            with ServeProcess(site, config, folder / "serve.log") as runtime:
                pid = runtime.process.pid
                start_rss = rss_mb(pid)
                load, answered = phase(runtime.base_url, args.turns, args.readers, question)
                before = rss_mb(pid)
                soak, soaked = phase(runtime.base_url, args.soak, args.readers, question)
                after = rss_mb(pid)
            store = open_store(folder / "records.sqlite3", "")
            try:
                stored = {t["turn_id"] for t in store.turns()}
            finally:
                store.close()
        lost = len((answered | soaked) - stored)
    print(f"\n## Load benchmark on tree {tree_state()}, {time.strftime('%Y-%m-%d')}, {corpus}, "
          f"{len(bundle.units)} units, provider delay {args.delay} s, {args.readers} readers\n")
    print("| phase | turns | turns/s | gate p50 ms | gate p99 ms | turn p50 ms | turn p99 ms "
          "| errors |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, s in (("load", load), ("soak", soak)):
        print(f"| {name} | {s.turns} | {s.per_second:.1f} | {s.gate_p50:.0f} | "
              f"{s.gate_p99:.0f} | {s.total_p50:.0f} | {s.total_p99:.0f} | {s.errors} |")
    print("\n| runtime RSS (MB) | at start | after the load | after the soak | records lost |")
    print("|---|---:|---:|---:|---:|")
    print(f"| `docpilot serve` | {start_rss:.0f} | {before:.0f} | {after:.0f} | {lost} |")


if __name__ == "__main__":
    main()
