"""Code in answers is coloured as the site colours its own: Pygments' short classes (as
pymdownx.highlight writes them) sent as [class, text] pairs on `pre` nodes, over HTTP
only; the pairs always spell the code exactly."""

from __future__ import annotations

import copy
import itertools
import json

import httpx
import pytest
from docpilot_runtime.serve.highlight import MAX_HIGHLIGHT_CHARS, code_tokens, highlight_blocks
from docpilot_runtime.shared.markdown_tree import Node
from servers.asgi import example_client as example_client  # module fixture

YAML = 'plugins:\n  - docpilot:\n      exclude: ["drafts/*"]  # not indexed\n'


def test_yaml_gets_the_classes_pymdownx_highlight_gives_it() -> None:
    pairs = code_tokens(YAML, "yaml")
    assert pairs is not None
    assert "".join(text for _, text in pairs) == YAML
    assert ["nt", "plugins"] in pairs and ["c1", "# not indexed"] in pairs
    assert all(a[0] != b[0] for a, b in itertools.pairwise(pairs)), "not merged"


def test_unknown_languages_and_huge_blocks_stay_plain() -> None:
    assert code_tokens("x = 1", "no-such-language") is None
    assert code_tokens("x = 1", "") is None
    assert code_tokens("x" * (MAX_HIGHLIGHT_CHARS + 1), "python") is None


def test_highlighting_copies_the_tree_and_reaches_nested_code() -> None:
    blocks: list[Node] = [
        {"t": "p", "c": ["Set it:"]},
        {"t": "ul", "c": [{"t": "li", "c": [{"t": "pre", "lang": "python", "c": ["x = 1"]}]}]},
        {"t": "pre", "c": ["plain"]},
    ]
    before = copy.deepcopy(blocks)
    out = highlight_blocks(blocks)
    assert blocks == before
    nested = out[1]["c"][0]["c"][0]  # type: ignore[index]
    assert nested["hl"][0] == ["n", "x"]
    assert "hl" not in out[2]  # type: ignore[operator]


@pytest.fixture(scope="module")
def client(example_client: httpx.Client) -> httpx.Client:
    return example_client


def _pres(nodes: list[Node]) -> list[dict[str, object]]:
    found: list[dict[str, object]] = []
    for node in nodes:
        if isinstance(node, dict):
            if node.get("t") == "pre":
                found.append(node)
            found += _pres(node.get("c", []))
    return found


def test_quoted_code_arrives_highlighted_over_http(client: httpx.Client) -> None:
    body = {"question": "How do I exclude a page from the assistant?"}
    reply = client.post("/api/ask", json=body)
    assert reply.status_code == 200
    result = reply.json()
    pres = _pres(result["blocks"])
    coloured = [p for p in pres if "hl" in p]
    assert coloured, json.dumps(pres)[:500]
    for pre in coloured:
        assert "".join(text for _, text in pre["hl"]) == "".join(pre["c"])  # type: ignore[attr-defined]
        assert pre["lang"]
