"""The reference pages' option tables, generated from `settings_schema` so they cannot drift.

A page marks each generated table with ``<!-- schema: NAME -->`` ... ``<!-- /schema -->``;
`render_page` rewrites what lies between, and ``python -m docpilot_runtime.settings.docs
PAGE...`` writes the pages in place (tests hold the committed pages equal to it).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path

from docpilot_runtime.settings.keys import Key, markdown_table
from docpilot_runtime.settings.tables import (
    ANSWER,
    BUNDLE,
    EMBEDDER,
    HEADERS,
    INDEX,
    INDEX_EMBEDDER,
    LIMITS,
    METRICS,
    PLUGIN,
    PROVIDER,
    RECORDS,
    SECOND_OPINION,
    SERVER,
    SOCIAL,
    SOCIAL_TEMPLATE,
    WEBHOOKS,
    WIDGET,
)

# name in the page -> (keys, link each key to its section)
TABLES: dict[str, tuple[tuple[Key, ...], bool]] = {
    "server": (SERVER.keys, False),
    "limits": (LIMITS.keys, False),
    "headers": (HEADERS.keys, False),
    "records": (RECORDS.keys, False),
    "webhooks": (WEBHOOKS.keys, False),
    "second-opinion": (SECOND_OPINION.keys, False),
    "metrics": (METRICS.keys, False),
    "bundle": (BUNDLE.keys, False),
    "providers": (PROVIDER.keys, False),
    "embedder": (EMBEDDER.keys, False),
    "answer": (ANSWER.keys, False),
    "social": (SOCIAL.keys, False),
    "social-templates": (SOCIAL_TEMPLATE.keys, False),
    "index": (INDEX.keys, False),
    "index-embedder": (INDEX_EMBEDDER.keys, False),
    "index-widget": (WIDGET.keys, False),
    "plugin": (PLUGIN.keys, True),
}
_BLOCK = re.compile(r"(<!-- schema: ([\w-]+) -->\n).*?(<!-- /schema -->)", re.S)


class UnknownTableError(KeyError):
    """A page names a table the schema does not have."""


def render_page(text: str) -> str:
    """``text`` with every marked table regenerated from the schema."""

    def table(match: re.Match[str]) -> str:
        name = match.group(2)
        if name not in TABLES:
            raise UnknownTableError(f"no schema table {name!r} (known: {', '.join(TABLES)})")
        keys, anchors = TABLES[name]
        return f"{match.group(1)}{markdown_table(keys, anchors)}\n{match.group(3)}"

    return _BLOCK.sub(table, text)


def main(argv: Sequence[str]) -> int:
    for name in argv:
        path = Path(name)
        text = path.read_text(encoding="utf-8")
        updated = render_page(text)
        if updated != text:
            path.write_text(updated, encoding="utf-8")
            print(f"{path}: tables regenerated")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
