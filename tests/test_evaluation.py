"""The evaluation harness: question files are checked line by line, and every question is
one real turn against a real built site."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from docpilot_runtime.evaluation import (
    EvalError,
    evaluate,
    format_report,
    load_questions,
    ranked_pages,
)
from docpilot_runtime.turn import load_runtime


def write_jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_bad_line_names_file_line_and_field(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "q.jsonl",
        [
            {"question": "How do I exclude a page?", "kind": "answerable",
             "expect_pages": ["reference/plugin-configuration/"]},
            {"question": "What is this?", "kind": "covered"},
        ],
    )
    with pytest.raises(EvalError, match=r"q\.jsonl:2: field 'kind' is 'covered'"):
        load_questions(path)


def test_answerable_question_without_pages_is_rejected(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "q.jsonl", [{"question": "x?", "kind": "answerable"}])
    with pytest.raises(EvalError, match="needs 'expect_pages'"):
        load_questions(path)


def test_unknown_field_is_rejected(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "q.jsonl", [{"question": "x?", "kind": "unrelated", "pagez": []}])
    with pytest.raises(EvalError, match=r"unknown field\(s\) \['pagez'\]"):
        load_questions(path)


def test_ranked_pages_are_distinct_and_drop_anchors_and_parts() -> None:
    ranked = ["/a/#x", "/a/#y~2", "/b/", "/a/#z", "/c/#q"]
    assert ranked_pages(ranked) == ["/a/", "/b/", "/c/"]


def test_report_per_kind_on_example_site(example_site: Path, tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "q.jsonl",
        [
            {"question": "How do I exclude a page from the assistant with front matter?",
             "kind": "answerable", "expect_pages": ["reference/plugin-configuration/"]},
            {"question": "What is a good recipe for banana bread with walnuts?",
             "kind": "unrelated"},
        ],
    )
    report = evaluate(load_runtime(example_site), load_questions(path))
    assert report.questions == 2
    answerable = report.kinds["answerable"]
    assert answerable.count == 1 and answerable.answered == 1.0
    assert answerable.recall_at_5 == 1.0
    assert report.kinds["unrelated"].answered == 0.0
    assert report.balanced_accuracy == 1.0
    table = format_report(report)
    assert "| answerable | 1 | 1.00 |" in table
    assert json.loads(json.dumps(report.to_dict()))["kinds"]["unrelated"]["count"] == 1


def docpilot_eval(*args: str) -> subprocess.CompletedProcess[str]:
    """`docpilot eval` as an owner runs it, in a fresh interpreter."""
    return subprocess.run(
        [sys.executable, "-m", "docpilot_runtime.cli", "eval", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


CLI_QUESTIONS: list[object] = [
    {"question": "How do I exclude a page from the assistant with front matter?",
     "kind": "answerable", "expect_pages": ["reference/plugin-configuration/"]},
    {"question": "Who composed the Moonlight Sonata?", "kind": "unrelated"},
    {"question": "Who composed the Moonlight Sonata?", "kind": "followup_unrelated",
     "history": [{"question": "How do I run the runtime behind a reverse proxy?",
                  "kind": "answer", "markdown": "Forward /api/ to it."}]},
    {"question": "and how do I include it again?", "kind": "followup_elliptical",
     "expect_pages": ["reference/plugin-configuration/"],
     "history": [{"question": "How do I exclude a page from the assistant?",
                  "kind": "answer", "markdown": "Set `docpilot: false` in its front matter."}]},
]


@pytest.mark.parametrize("mode", ["bundle", "lexical"])
def test_eval_verb_prints_json_per_kind(example_site: Path, tmp_path: Path, mode: str) -> None:
    path = write_jsonl(tmp_path / "q.jsonl", CLI_QUESTIONS)
    done = docpilot_eval(str(example_site), str(path), "--json", "--mode", mode)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["questions"] == 4
    assert set(report["kinds"]) == {
        "answerable", "unrelated", "followup_unrelated", "followup_elliptical"
    }
    assert report["kinds"]["answerable"]["recall_at_5"] == 1.0
    assert report["kinds"]["unrelated"]["answered"] == 0.0
    assert report["kinds"]["followup_unrelated"]["answered"] == 0.0
    retrievers = {o["retriever"] for o in report["outcomes"]}
    assert retrievers == {"hybrid" if mode == "bundle" else "lexical"}


def test_eval_verb_prints_the_table(example_site: Path, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "q.jsonl", CLI_QUESTIONS[:2])
    done = docpilot_eval(str(example_site), str(path))
    assert done.returncode == 0, done.stderr
    assert "| kind | n | answered | R@1 | R@5 | MRR |" in done.stdout
    assert "| answerable | 1 | 1.00 | 1.00 | 1.00 | 1.00 |" in done.stdout
    assert "| unrelated | 1 | 0.00 |" in done.stdout


def test_eval_verb_names_the_bad_line(example_site: Path, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "q.jsonl", [CLI_QUESTIONS[0], {"question": "x", "kind": "x"}])
    done = docpilot_eval(str(example_site), str(path))
    assert done.returncode == 2
    assert "q.jsonl:2: field 'kind' is 'x'" in done.stderr
