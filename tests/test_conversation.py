"""The composed channel rescues only what depends on the conversation (issue 9, point 1).

Real turns on the real example-site bundle (hybrid, default embedder) and on the same
bundle in lexical mode (what static mode runs): an uncovered question asked after a
covered turn stays refused; an elliptical follow-up still passes on the composed question.
None of these questions is a calibration probe (or a variant of one) or a dev-set
question; each uncovered one was carried past the gate in hybrid mode before the rule.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from docpilot_runtime.evaluation import EvalMode, evaluation_runtime
from docpilot_runtime.retrieval import ask_without_model
from docpilot_runtime.turn import Runtime
from docpilot_runtime.types import AskRequest, HistoryItem

PROXY = "How do I run the runtime behind a reverse proxy?"
CONTAINER = "How do I deploy the runtime in a container?"
STATIC = "How do I turn on static mode?"


@pytest.fixture(scope="module", params=["bundle", "lexical"])
def runtime(request: pytest.FixtureRequest, example_site: Path) -> Runtime:
    mode: EvalMode = request.param
    return evaluation_runtime(example_site, mode)


def turn(runtime: Runtime, question: str, earlier: str | None = None) -> dict[str, object]:
    history = () if earlier is None else (HistoryItem(question=earlier, kind="answer"),)
    result = ask_without_model(runtime.sites[0], AskRequest(question=question, history=history))
    return result.to_dict()


@pytest.mark.parametrize(
    ("earlier", "question"),
    [
        (PROXY, "What's a good recipe for banana bread?"),
        (PROXY, "Who composed the Moonlight Sonata?"),
        (CONTAINER, "Who composed the Moonlight Sonata?"),
        (CONTAINER, "what is the weather in Paris tomorrow?"),
        (PROXY, "what is the weather in Paris tomorrow?"),
    ],
)
def test_uncovered_question_after_a_covered_turn_is_refused(
    runtime: Runtime, earlier: str, question: str
) -> None:
    assert turn(runtime, question)["kind"] == "refusal"  # refused alone ...
    after = turn(runtime, question, earlier)
    assert after["kind"] == "refusal", after  # ... and after a covered turn
    assert after["rescued"] is False


def test_elliptical_follow_up_still_passes_on_the_composed_question(runtime: Runtime) -> None:
    after = turn(runtime, "and how do I turn it off?", STATIC)
    assert after["kind"] == "passages"


def test_elliptical_follow_up_refused_alone_is_rescued_in_hybrid_mode(example_site: Path) -> None:
    runtime = evaluation_runtime(example_site, "bundle")
    question = "and how do I include it again?"
    assert turn(runtime, question)["kind"] == "refusal"
    after = turn(runtime, question, "How do I exclude a page from the assistant?")
    assert after["kind"] == "passages" and after["rescued"] is True
