"""The refusal's text, built as the element tree the widget draws (page titles are docs
text: they stay text, and the links are the bundle's own page URLs). Pure Python."""

from __future__ import annotations

from collections.abc import Sequence

from docpilot_runtime.shared.framing import ENGLISH, Framing
from docpilot_runtime.shared.markdown_tree import Node, element
from docpilot_runtime.shared.types import PageRef


def refusal_blocks(
    site_name: str, closest: Sequence[PageRef], framing: Framing = ENGLISH
) -> list[Node]:
    """ "The docs do not seem to cover this", then the closest pages as a list of links,
    in the reader's language (`framing`)."""
    # The site name is filled in as text: a "{" in it is not a placeholder.
    before, _, after = framing.refusal.partition("{site}")
    blocks: list[Node] = [element("p", before + site_name + after)]
    if closest:
        blocks.append(element("p", framing.closest))
        items = [
            element("li", element("p", element("a", p.title or p.url, href=p.url))) for p in closest
        ]
        blocks.append(element("ul", *items))
    return blocks
