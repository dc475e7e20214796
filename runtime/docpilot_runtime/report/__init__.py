"""The owner's report (`docpilot report`): the pages to write next, what was cited, and
answer rates, confidence and cost over time, from the turn records."""

from docpilot_runtime.report.data import ReportData, build_report, content_terms, group_questions
from docpilot_runtime.report.render import WrittenReport, render_report, write_report

__all__ = [
    "ReportData",
    "WrittenReport",
    "build_report",
    "content_terms",
    "group_questions",
    "render_report",
    "write_report",
]
