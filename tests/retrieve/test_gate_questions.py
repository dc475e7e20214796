"""The refusal gate on real questions: what benchmarks/bench_gate.py measured, pinned as
behaviour on the httpx corpus's tune half (built for real with the default embedder, the
gate calibrated at build time from probes only; ``test_gate_probes`` checks that none of
these questions is a probe or a variant of one).

Before the coverage and known-share signals, the hybrid gate refused 1 of the 8 tune-half
near-misses (a question about a feature httpx lacks finds the page of a neighbouring
feature, and the dense cosine is as high there as on a covered question), and lexical
mode (what static mode runs) answered only 0.66 of the covered questions. The gate's own
branch refused 3 of the 8; on main, where the lexical channel also searches a compound
through its parts (which changes the terms the coverage signal reads), it refuses 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from corpora import ROOT
from docpilot_runtime.evaluate.questions import EvalQuestion, load_questions
from docpilot_runtime.evaluate.run import evaluate, evaluation_runtime
from shared_builds import SiteBuilds, reduced_site

TUNE = ROOT / "benchmarks" / "devsets" / "httpx" / "tune.jsonl"


@pytest.fixture(scope="module")
def httpx_site(site_builds: SiteBuilds) -> Path:
    return reduced_site(site_builds, ROOT / "benchmarks" / "corpora" / "httpx")


def _tune(*kinds: str) -> list[EvalQuestion]:
    return [q for q in load_questions(TUNE) if q.kind in kinds]


def test_hybrid_gate_refuses_more_near_misses_and_still_answers_the_covered(
    httpx_site: Path,
) -> None:
    runtime = evaluation_runtime(httpx_site)
    assert runtime.sites[0].mode == "hybrid"
    report = evaluate(runtime, _tune("answerable", "near_miss"))
    near_miss = report.kinds["near_miss"]
    assert near_miss.count == 8
    # 2 with the gate chosen on these hand-written tune halves; 1 since the gate is chosen on
    # the real-thread sets' tune halves (benchmarks/docs/bench_gate.md): the IPv6 one below.
    assert round((1 - near_miss.answered) * near_miss.count) >= 1
    assert report.kinds["answerable"].answered >= 0.95
    refused = {o.question for o in report.outcomes if not o.answered}
    assert (
        "How do I make httpx prefer IPv4 over IPv6 (happy eyeballs) when a host has both?"
        in refused
    )


def test_lexical_mode_answers_the_covered_questions_it_used_to_refuse(httpx_site: Path) -> None:
    report = evaluate(evaluation_runtime(httpx_site, "lexical"), _tune("answerable", "unrelated"))
    assert report.kinds["answerable"].answered >= 0.95  # 0.66 before
    assert report.kinds["unrelated"].answered <= 0.2  # and still refuses the off-topic ones
