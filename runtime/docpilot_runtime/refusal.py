"""The refusal's text, built as the element tree the widget draws (page titles are docs
text: they stay text, and the links are the bundle's own page URLs). Pure Python."""

from __future__ import annotations

from collections.abc import Sequence

from .markdown_tree import Node, element
from .types import PageRef


def refusal_blocks(site_name: str, closest: Sequence[PageRef]) -> list[Node]:
    """ "The docs do not seem to cover this", then the closest pages as a list of links."""
    blocks: list[Node] = [
        element(
            "p", f"The {site_name} documentation does not seem to cover this, so I won't guess."
        )
    ]
    if closest:
        blocks.append(element("p", "These pages are the closest matches:"))
        items = [
            element("li", element("p", element("a", p.title or p.url, href=p.url))) for p in closest
        ]
        blocks.append(element("ul", *items))
    return blocks
