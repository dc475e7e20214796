"""The evaluation harness: question files are checked line by line, and every question is
one real turn against a real built site."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from docpilot_runtime.evaluate.figures import Outcome, format_report, ranked_pages, summarise
from docpilot_runtime.evaluate.questions import EvalError, load_questions
from docpilot_runtime.evaluate.run import evaluate
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
    modes = json.loads(done.stdout)["modes"]
    assert list(modes) == [mode]
    report = modes[mode]
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


def test_eval_verb_runs_both_modes_and_writes_the_html_page(
    example_site: Path, tmp_path: Path
) -> None:
    path = write_jsonl(tmp_path / "q.jsonl", CLI_QUESTIONS)
    page = tmp_path / "out" / "eval.html"
    done = docpilot_eval(str(example_site), str(path), "--json", "--html", str(page))
    assert done.returncode == 0, done.stderr
    modes = json.loads(done.stdout)["modes"]
    assert list(modes) == ["bundle", "lexical"]
    assert modes["bundle"]["retriever"] == "hybrid" and modes["lexical"]["retriever"] == "lexical"
    for report in modes.values():
        refused = [o for o in report["outcomes"] if not o["answered"]]
        assert report["refusal_recall"] == 1.0  # both off-topic questions are refused
        assert report["refusal_precision"] == sum(not o["should_answer"] for o in refused) / len(
            refused)
        assert [b["count"] for b in report["bands"]] and sum(b["count"] for b in report["bands"]) == 4
    html = page.read_text(encoding="utf-8")
    assert "<script" not in html
    assert html.count('<section class="mode"') == 2
    assert "Confidence calibration, lexical mode" in html


def _outcome(kind: str, answered: bool, confidence: int, rank: int | None = None,
             expect: tuple[str, ...] = ()) -> Outcome:
    return Outcome(question=f"{kind} {confidence}", kind=kind, should_answer=bool(expect),
                   answered=answered, result_kind="passages" if answered else "refusal",
                   confidence=confidence, rescued=False, retriever="lexical", rank=rank,
                   pages=("/a/",), expected=expect)


def test_refusal_figures_bands_and_the_worst_misses_first() -> None:
    outcomes = [
        _outcome("answerable", True, 90, 1, ("/a/",)),
        _outcome("answerable", True, 70, None, ("/z/",)),  # answered from other pages
        _outcome("answerable", False, 30, 2, ("/a/",)),  # refused, page ranked 2
        _outcome("near_miss", True, 85),  # confidently answered, docs silent: the worst
        _outcome("near_miss", False, 35),
        _outcome("unrelated", False, 10),
    ]
    report = summarise(outcomes, "lexical")
    assert report.refusal_precision == 2 / 3  # 3 refused, 2 rightly
    assert report.refusal_recall == 2 / 3
    assert report.near_miss_refusal == 0.5
    assert report.recall_at_5 == 2 / 3 and report.recall_at_1 == 1 / 3
    assert [m.question for m in report.misses] == ["near_miss 85", "answerable 70", "answerable 30"]
    bands = {b.low: b for b in report.bands}
    assert bands[80].count == 2 and bands[80].answered == 1.0 and bands[80].should_answer == 0.5
    assert bands[20].count == 2 and bands[20].answered == 0.0 and bands[20].recall_at_5 == 1.0
    assert bands[40].count == 0 and bands[40].answered is None
    assert "| 80-100 | 2 | 0.50 | 1.00 | 1.00 |" in format_report(report)
    assert "| 20-39 | 2 | 0.50 | 0.00 | 1.00 |" in format_report(report)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ({"question": "x?", "kind": "near_miss", "expect_pages": ["a/"]},
         "expects a refusal, so expect_pages must be empty"),
        ({"question": "x?", "kind": "followup_unrelated"}, "needs a history"),
        ({"question": "x?", "kind": "unrelated", "history": [{"question": "y?"}]},
         "is a first turn"),
        ({"question": "x?", "kind": "after_refusal", "history": [{"question": "y?"}]},
         "last history turn to be 'refusal'"),
    ],
)
def test_kind_and_history_must_agree(tmp_path: Path, line: dict[str, object], message: str) -> None:
    with pytest.raises(EvalError, match=message):
        load_questions(write_jsonl(tmp_path / "q.jsonl", [line]))


def test_eval_with_the_model_reports_how_each_kind_ended(example_site: Path, tmp_path: Path) -> None:
    from docpilot_runtime.shared.types import AskRequest
    from docpilot_runtime.sites.loader import load_site
    from servers.anthropic_messages import Fault, Reply, answer_reply
    from servers.openai_chat import OpenAIChatServer

    covered = "How do I exclude a page from the assistant with front matter?"
    site = load_site(example_site, "/")
    first = site.bundle.units[site.retrieve(AskRequest(covered)).model_order()[0]]
    path = write_jsonl(
        tmp_path / "q.jsonl",
        [
            {"question": covered, "kind": "answerable",
             "expect_pages": ["reference/plugin-configuration/", first.url.split("#")[0]]},
            {"question": covered, "kind": "answerable",
             "expect_pages": ["reference/plugin-configuration/"]},
            {"question": covered + " Again?", "kind": "near_miss"},
            {"question": "What is a good recipe for banana bread with walnuts?",
             "kind": "unrelated"},
        ],
    )
    with OpenAIChatServer(llama_cpp=True) as model:
        model.script(
            answer_reply(markdown=f"Excluded [[{first.id}]] and linked [x](/nowhere/)."),
            Reply(text="It is somewhere in the settings, I think."),
            Fault("status", status=500),
            Fault("status", status=500),
        )
        config = tmp_path / "docpilot.toml"
        config.write_text(
            f'[[providers]]\nkind = "openai"\nbase_url = "{model.base_url}"\nmodel = "m"\n'
            'retries = 1\n'
        )
        page = tmp_path / "eval.html"
        done = docpilot_eval(
            str(example_site), str(path), "--json", "--mode", "bundle", "--model",
            "--config", str(config), "--html", str(page),
        )
        calls = len(model.requests)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)["modes"]["bundle"]
    answerable, near_miss = report["model"]["answerable"], report["model"]["near_miss"]
    assert answerable["count"] == 2 and answerable["cited_answer"] == 0.5
    assert answerable["refused_after_model"] == 0.5 and answerable["links_delinked"] == 1
    assert answerable["cites_expected"] == 1.0
    assert near_miss["passages"] == 1.0 if calls == 4 else near_miss["refused_by_gate"] == 1.0
    assert report["model"]["unrelated"]["refused_by_gate"] == 1.0
    assert answerable["first_text_p50"] is not None and answerable["input_tokens"] > 0
    html = page.read_text(encoding="utf-8")
    assert "With the model" in html and html.count('<tr class="model-kind">') == 3
