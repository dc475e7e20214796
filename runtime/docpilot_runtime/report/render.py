"""Writing the owner's report: `report.html` (one self-contained page, inline SVG plots,
no scripts) and `summary.md`, both from the Jinja2 templates shipped beside this module."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from jinja2 import Environment, PackageLoader, select_autoescape

from docpilot_runtime.records import RecordStore
from docpilot_runtime.report.data import DAY_MS, ReportData, build_report
from docpilot_runtime.report.plots import confidence_plot, cost_plot, rates_plot


@dataclass(frozen=True)
class WrittenReport:
    html: Path
    markdown: Path
    data: ReportData


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("docpilot_runtime.report", "templates"),
        autoescape=select_autoescape(["html.j2"], default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["percent"] = lambda value: f"{value * 100:.0f} %"
    env.filters["usd"] = lambda micro: f"${int(micro) / 1e6:.4f}"
    env.filters["day"] = lambda ms: datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d")
    return env


def render_report(data: ReportData, site: str = "") -> tuple[str, str]:
    """The report as (HTML, Markdown)."""
    env = _environment()
    context = {
        "data": data,
        "site": site,
        "plots": [rates_plot(data.days), confidence_plot(data.confidence_points),
                  cost_plot(data.days)],
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }
    html = env.get_template("report.html.j2").render(context)
    markdown = env.get_template("summary.md.j2").render(context)
    return html, markdown


def write_report(
    store: RecordStore, out_dir: str | Path, since_days: int = 30, site: str = ""
) -> WrittenReport:
    """Read the turns of the last ``since_days`` days and write both files to ``out_dir``."""
    now = int(time.time() * 1000)
    since = now - since_days * DAY_MS
    data = build_report(store.turns(since), since, now)
    html, markdown = render_report(data, site)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.html").write_text(html, encoding="utf-8")
    (out / "summary.md").write_text(markdown, encoding="utf-8")
    return WrittenReport(out / "report.html", out / "summary.md", data)
