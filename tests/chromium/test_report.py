"""The owner's report in Chromium: after a scripted session of mixed turns through the
real runtime, `docpilot report` writes a page whose plots actually draw (every SVG has
rects or a path with a non-zero box on screen) and whose unanswered section groups the
refused questions. A screenshot is kept in test-results/ for a person to look at."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from browsing import SCREENSHOTS
from docpilot_runtime import cli
from docpilot_runtime.records import RecordsSettings
from playwright.sync_api import Page
from records_session import REFUSED, SECRET, run_session

SHAPES = """svgs => svgs.map(svg => ({
  label: svg.getAttribute('aria-label'),
  box: (({width, height}) => ({width, height}))(svg.getBoundingClientRect()),
  shapes: [...svg.querySelectorAll('rect, path')].map(el => {
    const box = el.getBoundingClientRect();
    return {tag: el.tagName, width: box.width, height: box.height};
  }),
}))"""


@pytest.fixture(scope="module")
def report_file(example_site: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("report")
    records = RecordsSettings(path=str(work / "records.sqlite3"))
    run_session(example_site, records)
    config = work / "docpilot.toml"
    config.write_text(f"[records]\npath = {json.dumps(records.path)}\n", encoding="utf-8")
    mp = pytest.MonkeyPatch()
    mp.delenv("DOCPILOT_DATABASE_URL", raising=False)
    try:
        assert cli.main(["report", "--out", str(work / "out"), "--config", str(config)]) == 0
    finally:
        mp.undo()
    return work / "out" / "report.html"


def test_report_plots_draw_in_chromium_and_the_refusals_are_grouped(
    page: Page, report_file: Path
) -> None:
    page.set_viewport_size({"width": 1000, "height": 900})
    page.goto(report_file.as_uri())
    plots: list[dict[str, Any]] = page.eval_on_selector_all("svg.plot", SHAPES)
    assert [p["label"] for p in plots] == [
        "Answered and refused, per day",
        "Retrieval confidence over time",
        "Model cost per day (USD)",
    ]
    for plot in plots:
        assert plot["box"]["width"] > 200 and plot["box"]["height"] > 60, plot
        drawn = [s for s in plot["shapes"] if s["width"] > 1 and s["height"] > 1]
        assert drawn, f"{plot['label']}: nothing drawn with a size ({plot['shapes']})"
    confidence = plots[1]["shapes"]
    assert any(s["tag"] == "path" and s["width"] > 100 for s in confidence), confidence

    groups = page.locator("table.groups tr.group")
    texts = [groups.nth(i).inner_text() for i in range(groups.count())]
    sourdough = [t for t in texts if REFUSED[0] in t]
    assert len(sourdough) == 1 and REFUSED[1] in sourdough[0]  # one group, both questions
    assert sourdough[0].split()[0] == "2"
    assert any(REFUSED[2] in t and REFUSED[0] not in t for t in texts)
    assert SECRET not in page.content()

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "owner-report.png"), full_page=True)
