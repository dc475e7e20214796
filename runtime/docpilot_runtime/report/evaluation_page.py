"""Writing `docpilot eval --html`: one self-contained page (inline SVG, no scripts) with the
figures of every mode evaluated, the worst misses first, and a reliability plot per mode,
from the Jinja2 template beside the report's own."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from docpilot_runtime.evaluate.run import EvalRun
from docpilot_runtime.report.plots import calibration_plot
from docpilot_runtime.report.render import _environment

MISSES_SHOWN = 60  # per mode: the worst; the JSON report carries every outcome


def render_evaluation_page(run: EvalRun) -> str:
    """The evaluation report as HTML."""
    template = _environment().get_template("evaluation.html.j2")
    return template.render(
        run=run,
        plots={mode: calibration_plot(r.bands, mode) for mode, r in run.reports.items()},
        misses_shown=MISSES_SHOWN,
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    )


def write_evaluation_page(run: EvalRun, path: str | Path) -> Path:
    """Write the page to ``path`` (its folder is created) and return the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_evaluation_page(run), encoding="utf-8")
    return out
