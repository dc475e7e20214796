"""The lexical channel's variants on real questions: what was tried, on both halves.

Builds each dev-set corpus once with ``embedder: none`` (lexical mode, what static mode
gets) and runs stage 3 in process (``devset_harness``: the page ranks a real turn gives)
over every answerable question of each half, without and with the pasted context, once
per variant. A variant is a ``RetrievalParams`` (``dataclasses.replace``), BM25+
parameters of the stored block (k1, b, δ), field boosts (the index rebuilt with
``build_lexical(boosts=...)``), or a tokenizer alternative swapped in for the run (the
stemmer, the function-word list, which compounds a question searches). Choices are made
on the tune table; the test table is printed to confirm or refute them.

    .venv/bin/python benchmarks/bench_lexical_variants.py          # both tables
    .venv/bin/python benchmarks/bench_lexical_variants.py --smoke  # httpx tune, 3 rows
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import functools
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from docpilot_runtime.bundle.read import load_bundle
from docpilot_runtime.bundle.schema import Bundle, LexicalBlock
from docpilot_runtime.retrieve import tokenize as tok
from docpilot_runtime.retrieve.lexical import BOOSTS, LexicalDoc, build_lexical
from docpilot_runtime.retrieve.params import DEFAULT_PARAMS, RetrievalParams

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import tree_state
from corpus_sites import CORPORA, SPLITS, build
from devset_harness import Asked, Figures, page_rank, question_sets, searcher


def _unstemmed(word: str) -> str:
    return word


def _plurals_only(word: str) -> str:
    """Only the plural rules of ``tokenize.stem``."""
    if len(word) < 4 or not word.isascii() or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes", "zes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


@contextlib.contextmanager
def stemmer(fn: Callable[[str], str]) -> Iterator[None]:
    """Run with another stemmer (index and query alike: the index is rebuilt)."""
    saved, words = tok.stem, tok.FUNCTION_WORDS
    tok.stem = functools.lru_cache(maxsize=65536)(fn)  # type: ignore[assignment]
    tok.FUNCTION_WORDS = frozenset(tok.tokenize(tok._FUNCTION_WORDS))
    try:
        yield
    finally:
        tok.stem, tok.FUNCTION_WORDS = saved, words


@contextlib.contextmanager
def function_words(drop: str = "", add: str = "") -> Iterator[None]:
    saved = tok.FUNCTION_WORDS
    tok.FUNCTION_WORDS = (saved - set(tok.tokenize(drop))) | set(tok.tokenize(add))
    try:
        yield
    finally:
        tok.FUNCTION_WORDS = saved


@contextlib.contextmanager
def numbered_compounds_dropped() -> Iterator[None]:
    """Also search ``v2.1.0`` through its parts only (the product keeps such compounds)."""
    saved = tok._is_compound
    tok._is_compound = lambda token: len(tok._PART.findall(token)) > 1  # type: ignore[assignment]
    try:
        yield
    finally:
        tok._is_compound = saved  # type: ignore[assignment]


@dataclass(frozen=True)
class Variant:
    label: str
    params: RetrievalParams = DEFAULT_PARAMS
    bm25: dict[str, float] = field(default_factory=dict)  # k1, b, delta of the block
    boosts: tuple[tuple[str, int], ...] | None = None  # rebuild the index with these
    swap: Callable[[], contextlib.AbstractContextManager[None]] | None = None
    rebuild: bool = False  # the swap changes index-side tokens


def variants(smoke: bool) -> list[Variant]:
    d = DEFAULT_PARAMS

    def p(**changes: object) -> RetrievalParams:
        return dataclasses.replace(d, **changes)  # type: ignore[arg-type]

    before = p(search_compounds=True, query_tf_k3=0.0)
    out = [
        Variant("before (main a23fc07: compounds searched, no query tf)", before),
        Variant("+ compounds searched through their parts only", p(query_tf_k3=0.0)),
        Variant("+ query-term frequency, k3 4 (**kept**: the default)"),
    ]
    if smoke:
        return out
    out += [
        Variant("kept, query tf without dropping compounds", p(search_compounds=True)),
        *(Variant(f"kept, k3 {k}", p(query_tf_k3=k)) for k in (1.0, 2.0, 8.0, 1000.0)),
        Variant("kept, numbered compounds (v2.1.0) also dropped", swap=numbered_compounds_dropped),
        *(Variant(f"kept, δ {x}", bm25={"delta": x}) for x in (0.0, 1.0)),
        *(Variant(f"kept, k1 {x}", bm25={"k1": x}) for x in (0.9, 1.5, 2.0)),
        *(Variant(f"kept, b {x}", bm25={"b": x}) for x in (0.5, 0.75, 0.9)),
        *(Variant(f"kept, page support {x}", p(page_support=x)) for x in (0.0, 0.1, 0.3, 0.5)),
        *(Variant(f"kept, term cap {x}", p(query_term_cap=x)) for x in (8, 12, 24, 999)),
        *(Variant(f"kept, release prior {x}", p(release_prior=x)) for x in (1.0, 0.3)),
        *(
            Variant(
                f"kept, title ×{t}, breadcrumb ×{b}",
                boosts=(("title", t), ("breadcrumb", b), ("text", 1)),
            )
            for t, b in ((2, 1), (4, 1), (3, 2), (3, 0))
        ),
        Variant("kept, no stemming", swap=lambda: stemmer(_unstemmed), rebuild=True),
        Variant("kept, plurals-only stemming", swap=lambda: stemmer(_plurals_only), rebuild=True),
        Variant(
            "kept, function words keep get/all/any/out/up/over/from/not/no/if",
            swap=lambda: function_words(drop="get all any out up over from not no if"),
        ),
        Variant(
            "kept, question words (what/how/which/why/when/where/who) searched",
            swap=lambda: function_words(drop="what how which why when where who"),
        ),
        Variant(
            "kept, question chatter also dropped (please, want, need, use, work, issue…)",
            swap=lambda: function_words(
                add="please thank thanks hi hello anyone know want need like way use using "
                "used right now still work works working problem issue question"
            ),
        ),
    ]
    return out


def block_for(bundle: Bundle, variant: Variant) -> LexicalBlock:
    block = bundle.lexical
    if variant.boosts is not None or variant.rebuild:
        docs = [LexicalDoc(u.title, " ".join(u.breadcrumb), u.text) for u in bundle.units]
        block = build_lexical(docs, variant.boosts or BOOSTS)
    if variant.bm25:
        block = dataclasses.replace(
            block, params=dataclasses.replace(block.params, **variant.bm25)
        )
    return block


def measure(bundle: Bundle, variant: Variant, qs: Sequence[Asked]) -> Figures:
    with variant.swap() if variant.swap else contextlib.nullcontext():
        search = searcher(bundle, variant.params, None, block_for(bundle, variant))
        return Figures.of([page_rank(bundle, search, q) for q in qs])


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="httpx tune, three rows")
    parser.add_argument("--sites", type=Path, help="build into (and reuse) this folder")
    args = parser.parse_args(argv)
    corpora = ["httpx"] if args.smoke else list(CORPORA)
    splits = ["tune"] if args.smoke else list(SPLITS)
    print(f"# bench_lexical_variants: {dt.date.today().isoformat()}, tree {tree_state()}\n")
    with tempfile.TemporaryDirectory(prefix="bench-lexvar-") as tmp:
        workdir = args.sites or Path(tmp)
        bundles = {c: load_bundle(build(c, "none", workdir, reuse=True)) for c in corpora}
        for split in splits:
            sets = {
                name: (corpus, qs)
                for corpus in corpora
                for name, qs in question_sets(corpus, [split], args.smoke, "{corpus}").items()
            }
            print(f"## {split} halves, lexical mode: page R@1/R@5\n")
            print("| variant | " + " | ".join(sets) + " | all |")
            print("|---|" + "---|" * (len(sets) + 1))
            for variant in variants(args.smoke):
                cells, hits1, hits5, n = [], 0.0, 0.0, 0
                for corpus, qs in sets.values():
                    f = measure(bundles[corpus], variant, qs)
                    cells.append(f.short())
                    hits1, hits5, n = hits1 + f.r1 * f.count, hits5 + f.r5 * f.count, n + f.count
                total = f"{hits1 / n:.3f}/{hits5 / n:.3f}"
                print(f"| {variant.label} | " + " | ".join(cells) + f" | {total} |")
            print()


if __name__ == "__main__":
    main()
