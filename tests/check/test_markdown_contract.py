"""The validator's side of the Markdown contract: each fixture case's Markdown becomes
exactly its tree, and the Markdown shipped beside the tree reads back as the same tree."""

from __future__ import annotations

import pytest
from docpilot_runtime.shared.markdown_tree import ALLOWED
from markdown_contract import CASES, Case, validate


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_validator_ships_the_fixture_tree(case: Case) -> None:
    assert validate(case.markdown).blocks == case.blocks


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_shipped_markdown_reads_back_as_the_same_tree(case: Case) -> None:
    shipped = validate(case.markdown)
    again = validate(shipped.markdown, [c.id for c in shipped.citations])
    assert again.blocks == shipped.blocks, shipped.markdown
    assert again.markdown == shipped.markdown


def test_every_element_of_the_fixture_is_in_the_allowed_set() -> None:
    def tags(nodes: list[object]) -> set[str]:
        found: set[str] = set()
        for node in nodes:
            if isinstance(node, dict):
                found.add(node["t"])
                found |= tags(node.get("c", []))
        return found

    used = set().union(*(tags(case.blocks) for case in CASES))
    assert {"table", "thead", "tbody", "tr", "th", "td", "del"} <= used
    assert used <= ALLOWED
