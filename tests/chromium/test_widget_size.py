"""The widget's weight on every page: its script and stylesheet, as the build writes them
(minified), gzipped, stay within the budget (the worker and string tables load apart)."""

from __future__ import annotations

import gzip
from pathlib import Path

# Bytes, gzip -9. 15,000 until issue 24's round, which the issue allows to exceed when the
# extra bytes are accounted for: about 1.1 KB for the reader-facing states (rate cap with its
# countdown, slow, stopped, stalled, offline), the entry points (search hand-off, ask about
# and copy this page, the AI label and its report path), the skip link, clean Markdown for
# Copy answer, and table drawing (13.6 KB before it, 16.1 KB after); then about 0.25 KB for
# GFM tables, strikethrough and task lists drawn from the contract's tree and Copy answer
# writing them back as Markdown (16.4 KB); then about 55 B to fetch the stylesheet once more after a
# failed load (the widget stays hidden until it is in) and to name it when it never comes.
BUDGET = 16_600


def test_the_built_widget_script_and_stylesheet_stay_within_the_budget_gzipped(
    example_site: Path,
) -> None:
    folder = example_site / "docpilot"
    files = [folder / "docpilot.js", folder / "docpilot.css"]
    size = sum(len(gzip.compress(f.read_bytes(), 9)) for f in files)
    assert size <= BUDGET, f"{size} bytes gzipped, over the {BUDGET}-byte budget"
    widget = Path(__file__).parents[2] / "widget"
    source = sum(
        len(f.read_bytes()) for f in [*(widget / "src").glob("*.js"), widget / "docpilot.css"]
    )
    built = sum(len(f.read_bytes()) for f in files)
    assert built < source * 0.8, "the build copied the widget without minifying it"
