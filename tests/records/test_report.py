"""The owner's report from stored turns: unanswered questions grouped by shared content
terms and by closest page, most-cited pages, rates, plots as inline SVG with no script,
cost per day, and the second-opinion section only when verdicts exist."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from docpilot_runtime.records import FeedbackRecord, TurnRecord, open_store
from docpilot_runtime.report import build_report, content_terms, render_report, write_report
from docpilot_runtime.report.plots import confidence_plot, rates_plot

NOW = int(time.time() * 1000)
DAY = 86_400_000
SETUP = {"url": "/setup/", "title": "Setup"}
THEMES = {"url": "/themes/", "title": "Themes"}


def stored(turn_id: str, kind: str, question: str | None, ms: int = NOW, **extra: Any) -> dict[str, Any]:
    record = TurnRecord(turn_id=turn_id, created_ms=ms, kind=kind, bundle_hash="b",
                        question=question, **extra)
    return {**record.to_dict(), "feedback": None}


def sample() -> list[dict[str, Any]]:
    return [
        stored("r1", "refusal", "How do I deploy to Netlify?", NOW - 2 * DAY, confidence=20,
               closest=(SETUP,)),
        stored("r2", "refusal", "Deploying on Netlify with a custom domain", NOW - DAY,
               confidence=25, closest=(SETUP,)),
        stored("r3", "refusal", "Can I change the colour of the chat button?", NOW,
               confidence=30, closest=(THEMES,)),
        stored("a1", "answer", "How do I exclude a page?", NOW - DAY, confidence=80,
               cited_pages=(SETUP,), cost_micro_usd=1500),
        {**stored("a2", "answer", "Where are settings?", NOW, confidence=75,
                  cited_pages=(SETUP, THEMES), cost_micro_usd=500),
         "feedback": {"rating": "down", "reasons": ["incorrect"], "note": "", "created_ms": NOW}},
        stored("c1", "credential", None, NOW, withheld="credential"),
    ]


def test_unanswered_questions_group_by_shared_terms_and_by_closest_page() -> None:
    data = build_report(sample(), NOW - 7 * DAY, NOW + 1)
    assert {u.turn_id for u in data.unanswered} == {"r1", "r2", "r3", "a2"}  # a2: thumbs down
    netlify = data.groups[0]
    assert netlify.count == 2 and "netlify" in netlify.label
    assert set(netlify.questions) == {"How do I deploy to Netlify?",
                                      "Deploying on Netlify with a custom domain"}
    assert netlify.closest == (SETUP,)
    assert (data.by_closest_page[0].url, data.by_closest_page[0].count) == ("/setup/", 2)
    assert [(p.url, p.count) for p in data.most_cited] == [("/setup/", 2), ("/themes/", 1)]


def test_content_terms_drop_function_words_through_the_shared_tokenizer() -> None:
    assert content_terms("How do I deploy to Netlify?") == frozenset({"deploy", "netlify"})
    assert "deploy" in content_terms("Deploying on Netlify")  # the tokenizer's stemmer


def test_rates_cost_and_confidence_per_day() -> None:
    data = build_report(sample(), NOW - 7 * DAY, NOW + 1)
    assert data.kinds["refusal"] == 3 and round(data.refusal_rate, 2) == 0.6
    assert data.cost_micro_usd == 2000 and len(data.days) == 3
    assert [d.refused for d in data.days] == [1, 1, 1]
    assert data.days[-1].other == 1  # the credential turn counts, with no question


def test_turns_outside_the_period_are_left_out() -> None:
    data = build_report(sample(), NOW - DAY // 2, NOW + 1)
    assert {u.turn_id for u in data.unanswered} == {"r3", "a2"}


def test_plots_have_shapes_with_size_for_one_day_and_for_many() -> None:
    one_day = build_report([t for t in sample() if t["created_ms"] == NOW], NOW - DAY, NOW + 1)
    rates = rates_plot(one_day.days)
    assert rates.rects and all(r.width > 0 and r.height > 0 for r in rates.rects)
    line = confidence_plot(((NOW, 20), (NOW + 5, 70), (NOW + 9, 40)))
    xs = [float(v) for v in re.findall(r"([\d.]+) [\d.]+", line.path)]
    assert line.path.startswith("M ") and max(xs) - min(xs) > 100


def test_the_html_report_is_self_contained_and_the_markdown_matches_it() -> None:
    html, markdown = render_report(build_report(sample(), NOW - 7 * DAY, NOW + 1), "Docs")
    assert "<script" not in html and "http://" not in html.replace(
        'xmlns="http://www.w3.org/2000/svg"', "")
    assert html.count("<svg") == 3 and "<rect" in html and "<path" in html
    assert "How do I deploy to Netlify?" in html and "How do I deploy to Netlify?" in markdown
    assert "$0.0020" in html and "$0.0020" in markdown
    assert "Second opinions" not in html and "Second opinions" not in markdown


def test_question_text_is_escaped_in_the_html() -> None:
    turns = [stored("x", "refusal", "<img src=x onerror=alert(1)> how?")]
    html, _ = render_report(build_report(turns, NOW - DAY, NOW + 1))
    assert "<img src=x" not in html and "&lt;img src=x" in html


def test_verdicts_appear_when_present() -> None:
    turns = [*sample(), stored("v1", "answer", "Is it free?", verdict="unsupported"),
             stored("v2", "answer", "Is it fast?", verdict="supported")]
    html, markdown = render_report(build_report(turns, NOW - 7 * DAY, NOW + 1))
    assert "Second opinions" in html and "unsupported" in html and "Is it free?" in html
    assert "- unsupported: 1" in markdown and "- supported: 1" in markdown


def test_write_report_reads_the_store_and_writes_both_files(tmp_path: Path) -> None:
    store = open_store(tmp_path / "r.sqlite3", "")
    try:
        store.write(
            [TurnRecord("q1", NOW, "refusal", "b", question="Netlify deploy?"),
             TurnRecord("q2", NOW - 60 * DAY, "refusal", "b", question="Old question?")],
            [FeedbackRecord("q1", NOW, "down")],
        )
        written = write_report(store, tmp_path / "out", since_days=30)
    finally:
        store.close()
    assert written.html.exists() and written.markdown.exists()
    text = written.html.read_text(encoding="utf-8")
    assert "Netlify deploy?" in text and "Old question?" not in text
