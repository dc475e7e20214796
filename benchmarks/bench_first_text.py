"""Time to first visible text: how soon a reader sees validated answer text, for a model
that cites its first claim, one that cites at the end of each paragraph, and one that
keeps its one citation for the end.

Builds example-site, serves it with the runtime on a real uvicorn (in a thread of this
process) with one Anthropic-protocol provider: the scripted local server of the tests,
which streams the `answer` call's JSON in 7-character pieces, one per `--pace` seconds
(20 ms: ~350 characters a second, a brisk hosted model). The scripted answers are the
same text (a three-sentence paragraph, a list, more paragraphs, a code block; ~1,300
characters); only where the citations sit differs. Each turn is read as the widget reads it (POST
/api/ask over HTTP, Server-Sent Events); reported per model, median over `--runs` turns:

- first visible text: request sent to the first `delta` event carrying text (settled
  blocks or a draft), the moment the widget first draws answer text;
- answer: request sent to the final `answer` event;
- characters of the answer the validator had read when it first released text (the
  stream's own rule, replayed without the clock in 7-character pieces).

Nothing is shown before a valid citation (validate.py): a model that cites only at its
end shows nothing until then, which is why the prompt asks for a citation on the first
claim; from the moment the first citation is complete, the text up to it shows. Run: ``.venv/bin/python benchmarks/bench_first_text.py [--runs 5] [--pace 0.02]``;
``--smoke`` runs one turn each with a 2 ms pace.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(HERE))
from common import tree_state  # noqa: E402
from corpora import EXAMPLE_SITE, mkdocs_build  # noqa: E402
from docpilot_runtime.bundle.schema import Page  # noqa: E402
from docpilot_runtime.check.validate import Source, StreamValidator  # noqa: E402
from docpilot_runtime.providers import ProviderSettings  # noqa: E402
from docpilot_runtime.serve.app import create_app  # noqa: E402
from docpilot_runtime.settings.limits import LimitSettings  # noqa: E402
from docpilot_runtime.settings.load import Settings  # noqa: E402
from docpilot_runtime.shared.types import AskRequest  # noqa: E402
from docpilot_runtime.sites.loader import load_site  # noqa: E402
from servers.anthropic_messages import AnthropicServer, answer_reply  # noqa: E402
from servers.runtime import RunningServer, serve_app  # noqa: E402

QUESTION = "How do I exclude a page from the assistant?"
WAIT = 120.0


# Where each scripted model puts its citations: after the first claim, at the end of
# every paragraph (and of the list), or only at the very end.
PLACEMENTS = {
    "cites its first claim": ("first", "last"),
    "cites at the end of each paragraph": ("paragraph", "list", "third", "last"),
    "cites only at its end": ("last",),
}


def answer_text(cite: str, places: tuple[str, ...]) -> str:
    """The scripted answer with ``cite`` at each of ``places``."""

    def at(place: str) -> str:
        return f" {cite}" if place in places else ""

    return (
        f"To leave a page out of the assistant, list it under `exclude` in the plugin's "
        f"options{at('first')}. The option takes globs, matched against URL paths and "
        "source paths alike, so one entry can cover a whole folder. A page that matches "
        f"any of them is built as usual but never indexed{at('paragraph')}.\n\n"
        "- a glob on URL paths, such as `internal/*`;\n"
        "- a glob on source paths, such as `drafts/*.md`;\n"
        f"- or one page by its file name{at('list')}.\n\n"
        "Excluded pages are still built and published as usual; they only stay out of the "
        "index, so no answer can cite them and no excerpt of theirs reaches a model. The "
        "next build drops their sections from the bundle, and the embedding cache keeps "
        f"their vectors in case they come back{at('third')}.\n\n"
        "```yaml\nplugins:\n  - docpilot:\n      exclude:\n        - \"internal/*\"\n"
        "        - \"drafts/*.md\"\n```\n\n"
        "A single page can also opt out from its own front matter, which is handy when "
        "the page lives among others that should stay in; the glob list is the better "
        "tool for whole folders. Rebuild the site after changing either, and check the "
        "build log: it names every page it left out and the rule that matched it, so a "
        "glob that matches too much shows up at once rather than as a missing answer "
        f"later{at('last')}.\n"
    )


def shown_after(text: str, cited: str, url: str, pages: list[Page]) -> int:
    """Characters of ``text`` the validator had read, in 7-character pieces, when it
    first released something (what the stream does, without the clock)."""
    validator = StreamValidator({cited: Source(cited, url, cited)}, pages)
    for end in range(7, len(text) + 7, 7):
        if validator.feed(text[end - 7 : end]) is not None:
            return min(end, len(text))
    return len(text)


def one_turn(running: RunningServer) -> tuple[float, float, str]:
    """(seconds to first visible text, seconds to the answer, the answer's kind)."""
    started = time.perf_counter()
    first = None
    kind = ""
    with httpx.stream(
        "POST",
        f"{running.base_url}/api/ask",
        json={"question": QUESTION},
        headers={"Accept": "text/event-stream"},
        timeout=WAIT,
    ) as response:
        name = ""
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data = json.loads(line[6:])
                if name == "delta" and first is None and (data["blocks"] or data["draft"]):
                    first = time.perf_counter() - started
                elif name == "answer":
                    kind = data["kind"]
    done = time.perf_counter() - started
    return (done if first is None else first), done, kind


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="turns per model")
    parser.add_argument("--pace", type=float, default=0.02, help="seconds per streamed piece")
    parser.add_argument("--smoke", action="store_true", help="one turn each, 2 ms pace")
    args = parser.parse_args()
    runs, pace = (1, 0.002) if args.smoke else (args.runs, args.pace)

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        site_dir = Path(tmp) / "site"
        mkdocs_build(EXAMPLE_SITE / "mkdocs.yml", "--site-dir", str(site_dir))
        site = load_site(site_dir, "/")
        unit = site.bundle.units[site.retrieve(AskRequest(QUESTION)).model_order()[0]]
        cited = unit.id
        with AnthropicServer(pace=pace) as provider_server:
            provider = ProviderSettings(
                kind="anthropic", base_url=provider_server.base_url, model="bench", retries=0
            )
            no_caps = LimitSettings(answers_per_minute=0, answers_per_minute_per_client=0)
            app = create_app(site_dir, Settings(providers=(provider,), caps=no_caps))
            with serve_app(app) as running:
                for label, places in PLACEMENTS.items():
                    text = answer_text(f"[[{cited}]]", places)
                    samples = []
                    for _ in range(runs):
                        provider_server.script(
                            answer_reply(markdown=text, citations=[cited], confidence=90)
                        )
                        samples.append(one_turn(running))
                    kinds = {kind for _, _, kind in samples}
                    if kinds != {"answer"}:
                        raise RuntimeError(f"{label}: the turns settled as {kinds}, not answers")
                    first = statistics.median(s[0] for s in samples)
                    done = statistics.median(s[1] for s in samples)
                    read = shown_after(text, cited, unit.url, list(site.bundle.pages))
                    rows.append(
                        f"| {label} | {runs} | {first:.2f} | {done:.2f} | {first / done:.0%} | "
                        f"{read:,} of {len(text):,} |"
                    )

    load = os.getloadavg()[0]
    print(
        f"\n## First visible text on tree {tree_state()}, {time.strftime('%Y-%m-%d')}, "
        f"{os.cpu_count()} CPUs, 1-minute load {load:.1f}, {pace * 1000:g} ms per "
        "7-character piece\n"
    )
    print(
        "| scripted model | turns | first visible text (s) | answer (s) | share of the wait | "
        "characters streamed before it showed |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for line in rows:
        print(line)


if __name__ == "__main__":
    main()
