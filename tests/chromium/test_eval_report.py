"""`docpilot eval --html` in Chromium: over example-site's own dev-set test half, asked in
both modes, the page draws one reliability plot per mode (bars with a size on screen in the
confidence bands that hold questions, five band labels, the diagonal), lists the misses worst
first, and runs no script. A screenshot is kept in test-results/ for a person to look at."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from browsing import SCREENSHOTS
from playwright.sync_api import Page

QUESTIONS = Path(__file__).resolve().parents[2] / "benchmarks" / "devsets" / "example-site" / (
    "test.jsonl")

PLOTS = """svgs => svgs.map(svg => ({
  label: svg.getAttribute('aria-label'),
  box: (({width, height}) => ({width, height}))(svg.getBoundingClientRect()),
  bars: [...svg.querySelectorAll('rect')].map(el => {
    const box = el.getBoundingClientRect();
    return {css: el.getAttribute('class'), width: box.width, height: box.height};
  }),
  bands: [...svg.querySelectorAll('text.band')].map(el => el.getBoundingClientRect().width),
  dots: svg.querySelectorAll('circle').length,
  diagonal: svg.querySelector('path.line').getBoundingClientRect().width,
}))"""


@pytest.fixture(scope="module")
def evaluation(example_site: Path, tmp_path_factory: pytest.TempPathFactory,
               ) -> tuple[Path, dict[str, Any]]:
    """`docpilot eval --json --html` as an owner runs it, in its own interpreter (the sync
    Playwright API keeps an event loop on this thread)."""
    page = tmp_path_factory.mktemp("eval") / "eval.html"
    done = subprocess.run(
        [sys.executable, "-m", "docpilot_runtime.cli", "eval", str(example_site),
         str(QUESTIONS), "--json", "--html", str(page)],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return page, json.loads(done.stdout)


def test_eval_report_draws_a_reliability_plot_per_mode_and_lists_misses_worst_first(
    page: Page, evaluation: tuple[Path, dict[str, Any]]
) -> None:
    html, data = evaluation
    page.set_viewport_size({"width": 1100, "height": 900})
    page.goto(html.as_uri())
    plots: list[dict[str, Any]] = page.eval_on_selector_all("svg.plot", PLOTS)
    assert [p["label"] for p in plots] == [
        "Confidence calibration, bundle mode",
        "Confidence calibration, lexical mode",
    ]
    for plot, report in zip(plots, data["modes"].values(), strict=True):
        assert plot["box"]["width"] > 300 and plot["box"]["height"] > 100, plot
        assert len(plot["bands"]) == 5 and all(w > 10 for w in plot["bands"]), plot["bands"]
        assert plot["diagonal"] > 200
        filled = [b for b in report["bands"] if b["count"]]
        drawn = [b for b in plot["bars"] if b["width"] > 1 and b["height"] >= 1]
        # one bar for the answer rate of every band holding questions, one for recall@5
        # where the band holds answerable ones, and a dot for the share the docs answer
        assert sum(b["css"] == "answered" for b in drawn) == len(filled), (plot, filled)
        assert sum(b["css"] == "recall" for b in drawn) == sum(
            b["recall_at_5"] is not None for b in filled)
        assert plot["dots"] == len(filled)

    for mode, report in data["modes"].items():
        rows = page.locator(f"#mode-{mode} tr.miss")
        assert rows.count() == min(len(report["misses"]), 60)
        if report["misses"]:
            worst = report["misses"][0]
            assert worst["question"] in rows.first.inner_text()
            severities = [m["severity"] for m in report["misses"]]
            assert severities == sorted(severities, reverse=True)
    assert page.locator("script").count() == 0

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "eval-report.png"), full_page=True)
    (SCREENSHOTS / "eval-report.json").write_text(json.dumps(
        {m: {k: r[k] for k in ("recall_at_5", "balanced_accuracy", "near_miss_refusal")}
         for m, r in data["modes"].items()}), encoding="utf-8")
