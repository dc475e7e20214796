"""Reading a reply's element tree (`blocks`) in tests: standard library only, so the
validator's tests that also run under Pyodide can import it."""

from __future__ import annotations

from typing import Any


def links(blocks: list[Any]) -> list[dict[str, Any]]:
    """Every link node (`{"t": "a", ...}`) in a reply's element tree."""
    found, stack = [], list(blocks)
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("t") == "a":
                found.append(node)
            stack.extend(node.get("c", []))
    return found


def hrefs(blocks: list[Any]) -> list[str]:
    """Every link target in a validated answer's element tree."""
    return [str(node["href"]) for node in links(blocks)]
