"""The gate's calibration probes and the dev-set questions never overlap.

The gate is calibrated at build time on probes (fixed off-topic questions, questions
made from a unit's own words, word salads, another tool's name with the site's words,
other stacks' error messages, options that do not exist: ``calibrate.probe_sets``); the
dev sets measure it. A dev-set question
that is a probe, or a probe with one word replaced, would be measured on what the gate
was fitted to. Checked for every question of both halves (and every earlier question of
a conversation) of every set (real-thread and hand-written dev sets, follow-up sets, the
non-English sets) against every probe of its own corpus, built for real.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import pytest
from corpora import ROOT
from devset_sites import BuiltSites
from docpilot_runtime.bundle.read import load_bundle
from docpilot_runtime.bundle.schema import Bundle
from docpilot_runtime.evaluate.questions import load_questions
from docpilot_runtime.index.calibrate import probe_sets
from docpilot_runtime.scoring.lexical_numpy import NumpyLexical

DEVSETS = ROOT / "benchmarks" / "devsets"
# Every corpus with a dev set but example-site (built by its own fixture): the sets from
# real threads and the hand-written ones.
OUTSIDE = tuple(
    sorted(p.name for p in (ROOT / "benchmarks" / "corpora").iterdir() if (DEVSETS / p.name).is_dir())
)
# Besides a corpus's dev set, its follow-up set and its non-English questions, if any.
EXTRA_SETS = ("followups", "multilingual")


# A character of a script written without spaces (Han, kana, Hangul) counts as a word.
_UNSPACED = "\u2e80-\u9fff\uac00-\ud7af"
_WORD = re.compile(rf"[{_UNSPACED}]|[^\W{_UNSPACED}]+")


def words(text: str) -> tuple[str, ...]:
    return tuple(_WORD.findall(text.casefold()))


def is_variant(question: str, probe: str) -> bool:
    """The same words, or the same words but one (in texts of three words or more: any
    two one-word texts differ by "one word")."""
    a, b = words(question), words(probe)
    if a == b:
        return True
    return len(a) == len(b) >= 3 and sum(x != y for x, y in zip(a, b, strict=True)) == 1


def devset_texts(corpus: str) -> list[str]:
    texts = []
    folders = [DEVSETS / corpus, *(DEVSETS / extra / corpus for extra in EXTRA_SETS)]
    for folder in folders:
        for split in ("tune", "test"):
            if (folder / f"{split}.jsonl").is_file():
                for q in load_questions(folder / f"{split}.jsonl"):
                    texts += [q.question, *(h.question for h in q.history)]
    return texts


def overlaps(texts: Iterable[str], probes: Iterable[str]) -> list[tuple[str, str]]:
    probe_list = list(probes)
    return [(t, p) for t in texts for p in probe_list if is_variant(t, p)]


def test_variant_rule_catches_one_replaced_word_and_nothing_more() -> None:
    assert is_variant("Why is the sky blue?", "why is the sky blue")
    assert is_variant("Why is the sea blue?", "Why is the sky blue?")
    assert not is_variant("Why is the sea green?", "Why is the sky blue?")
    assert not is_variant("Why is the sky blue today?", "Why is the sky blue?")
    assert is_variant("长城有多长？", "长城有多高？")
    assert not is_variant("怎么升级到新版本？", "北京有哪些好吃的餐厅？")


def corpus_bundle(corpus: str, example_site: Path, built_sites: BuiltSites, work: Path) -> Bundle:
    """The corpus as the dev-set tests build it (its own mkdocs.yml: the pages the
    benchmarks measure), indexed lexical only: the probes need its units and its index."""
    if corpus == "example-site":
        return load_bundle(example_site)
    return built_sites.indexed_copy(corpus, work)[1]


@pytest.mark.parametrize("corpus", ["example-site", *OUTSIDE])
def test_no_devset_question_is_a_probe_or_a_variant_of_one(
    corpus: str, example_site: Path, built_sites: BuiltSites, tmp_path: Path
) -> None:
    bundle = corpus_bundle(corpus, example_site, built_sites, tmp_path)
    probes = probe_sets(bundle.units, NumpyLexical(bundle.lexical))
    assert all(probes.values()), probes  # every set exists, so the check below means something
    texts = devset_texts(corpus)
    assert len(texts) >= 80
    assert overlaps(texts, [p for group in probes.values() for p in group]) == []
