"""The evaluation harness: question files are checked line by line, and every question is
one real turn against a real built site."""

from __future__ import annotations

import json
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
