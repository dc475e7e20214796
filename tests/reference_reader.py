"""A stock reader of the answer contract's Markdown dialect (CommonMark with GFM tables,
strikethrough and task lists), raw HTML and link references on: what a careless renderer
would make of an answer. Kept apart from the contract's YAML fixture so the validator's
tests that only need the reader also run under Pyodide (no PyYAML wheel there)."""

from __future__ import annotations

from markdown_it import MarkdownIt
from mdit_py_plugins.tasklists import tasklists_plugin

REFERENCE_READER = (
    MarkdownIt("commonmark").enable(["table", "strikethrough"]).use(tasklists_plugin)
)
