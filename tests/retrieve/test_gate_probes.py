"""The gate's calibration probes and the dev-set questions never overlap.

The gate is calibrated at build time on probes (fixed off-topic questions, questions
made from a unit's own words, word salads); the dev sets measure it. A dev-set question
that is a probe, or a probe with one word replaced, would be measured on what the gate
was fitted to. Checked for every question of both halves (and every earlier question of
a conversation) against every probe of its own corpus, built for real.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import pytest
from corpora import ROOT
from docpilot_runtime.bundle.read import load_bundle
from docpilot_runtime.evaluate.questions import load_questions
from docpilot_runtime.index.calibrate import covered_probes, salad_probes
from docpilot_runtime.index.probes import OFF_TOPIC
from docpilot_runtime.scoring.lexical_numpy import NumpyLexical
from shared_builds import SiteBuilds, reduced_site

DEVSETS = ROOT / "benchmarks" / "devsets"
OUTSIDE = ("httpx", "starlette", "uvicorn")


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
    for split in ("tune", "test"):
        for q in load_questions(DEVSETS / corpus / f"{split}.jsonl"):
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


@pytest.fixture(scope="module")
def corpus_sites(example_site: Path, site_builds: SiteBuilds) -> dict[str, Path]:
    sites = {"example-site": example_site}
    for corpus in OUTSIDE:
        source = ROOT / "benchmarks" / "corpora" / corpus
        sites[corpus] = reduced_site(site_builds, source, {"embedder": "none"})
    return sites


@pytest.mark.parametrize("corpus", ["example-site", *OUTSIDE])
def test_no_devset_question_is_a_probe_or_a_variant_of_one(
    corpus: str, corpus_sites: dict[str, Path]
) -> None:
    bundle = load_bundle(corpus_sites[corpus])
    lexical = NumpyLexical(bundle.lexical)
    covered = covered_probes(bundle.units, lexical)
    salads = salad_probes(bundle.units, lexical)
    assert covered and salads  # the probes exist, so the check below means something
    texts = devset_texts(corpus)
    assert len(texts) > 90
    assert overlaps(texts, [*OFF_TOPIC, *covered, *salads]) == []
