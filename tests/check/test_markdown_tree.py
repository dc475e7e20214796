"""The element tree the widget draws, its Markdown, and the one code-fence scanner."""

from __future__ import annotations

import re
from typing import Any

import pytest
from docpilot_runtime.reply.passages import passages_blocks
from docpilot_runtime.reply.refusal import refusal_blocks
from docpilot_runtime.screen.credentials import CredentialMatch, credential_reply
from docpilot_runtime.screen.social import DEFAULT_TEMPLATES
from docpilot_runtime.shared.fences import fenced_blocks, open_fence
from docpilot_runtime.shared.framing import ENGLISH
from docpilot_runtime.shared.markdown_tree import (
    ALLOWED,
    code_block,
    element,
    text_of,
    to_markdown,
    trusted_blocks,
)
from docpilot_runtime.shared.types import PageRef, Result
from reference_reader import REFERENCE_READER

COMMONMARK = REFERENCE_READER


def commonmark_text(markdown: str) -> str:
    plain = re.sub(r"<[^>]*>", "", COMMONMARK.render(markdown))
    for entity, ch in (("&lt;", "<"), ("&gt;", ">"), ("&quot;", '"'), ("&amp;", "&")):
        plain = plain.replace(entity, ch)
    return re.sub(r"\s+", "", plain)


def flat(blocks: list) -> str:  # type: ignore[type-arg]
    return re.sub(r"\s+", "", text_of(blocks))


def test_serialised_text_reads_back_as_the_tree_text() -> None:
    blocks = [
        element("h2", "1. Not a list # nor a heading"),
        element(
            "p",
            "- no item\n+ no item\n= no underline\n3) no item ",
            element("strong", "a*b_c"),
            " <b>&amp; [x](y) `z` ~~~ \\",
        ),
        element(
            "ul",
            element("li", element("p", "item ", element("code", "a`b"), " ", element("cite", n=1))),
            element("li", element("blockquote", element("p", "> quoted"))),
        ),
        element("ol", element("li", element("p", "two")), start=2),
        code_block("```\nnested fence\n```", "python extra words"),
        element(
            "p",
            element("a", "link [text]", href="/guide/#a b(c)"),
            element("cite", n=2),
            "(not a link)",
        ),
    ]
    markdown = to_markdown(blocks)
    assert commonmark_text(markdown) == flat(blocks)
    rendered = COMMONMARK.render(markdown)
    assert re.findall(r'href="([^"]*)"', rendered) == ["/guide/#a%20b(c)"]
    assert '<ol start="2">' in rendered and 'class="language-python"' in rendered


def test_only_allowed_elements_can_be_built() -> None:
    with pytest.raises(ValueError, match="img"):
        element("img")
    assert {"p", "a", "pre", "cite"} <= ALLOWED and "script" not in ALLOWED


@pytest.mark.parametrize("kind", ["openai_api_key", "password_assignment"])
def test_credential_replies_read_as_commonmark_reads_them(kind: str) -> None:
    markdown = credential_reply(CredentialMatch(kind=kind, label="OpenAI API key", start=0, end=1))
    blocks = trusted_blocks(markdown)
    assert flat(blocks) == commonmark_text(markdown)
    assert any(isinstance(n, dict) and n["t"] == "strong" for b in blocks for n in b["c"])


def test_social_templates_read_as_commonmark_reads_them() -> None:
    for language, intents in DEFAULT_TEMPLATES.items():
        for intent, template in intents.items():
            markdown = template.replace("{site}", "My \\*Docs\\*")
            assert flat(trusted_blocks(markdown)) == commonmark_text(markdown), (language, intent)


def test_a_result_without_a_tree_gets_one_from_its_text() -> None:
    result = Result(
        turn_id="t", kind="social", markdown="Hi **there**.\n\nAsk away.", bundle_hash="h"
    )
    assert result.blocks == [
        element("p", "Hi ", element("strong", "there"), "."),
        element("p", "Ask away."),
    ]
    assert result.to_dict()["blocks"] == result.blocks


def test_refusal_tree_links_only_the_bundle_pages() -> None:
    blocks = refusal_blocks(
        "My [Docs](https://evil.example)", [PageRef("/guide/", "Guide <b>[x](y)</b>")]
    )
    markdown = to_markdown(blocks)
    assert re.findall(r'href="([^"]*)"', COMMONMARK.render(markdown)) == ["/guide/"]
    assert commonmark_text(markdown) == flat(blocks)


class Unit:
    def __init__(self, uid: str, title: str, text: str) -> None:
        self.id, self.title, self.text = uid, title, text


def test_passages_tree_keeps_docs_text_as_text() -> None:
    units = [
        Unit(
            "a",
            "Install *it*",
            "Run `pip install x` to install. See [here](https://evil.example).\n\n"
            "```bash\npip install x\n```",
        ),
        Unit("b", "Limits", "Requests over 3 < 5 & co are refused."),
    ]
    blocks = passages_blocks("install limits", units)
    markdown = to_markdown(blocks)
    assert "href" not in COMMONMARK.render(markdown)
    assert commonmark_text(markdown) == flat(blocks)
    # The framing line, then each excerpt quoted: a blockquote holding its cited paragraph
    # and its code.
    assert blocks[0] == {"t": "p", "c": [ENGLISH.passages]}
    assert [b["t"] for b in blocks[1:]] == ["blockquote", "blockquote"]
    quoted = [q for b in blocks[1:] for q in b["c"]]
    assert quoted[1] == {"t": "pre", "c": ["pip install x"], "lang": "bash"}
    assert [
        n for b in quoted for n in b.get("c", []) if isinstance(n, dict) and n["t"] == "cite"
    ] == [{"t": "cite", "n": 1}, {"t": "cite", "n": 2}]


def test_fence_scanner_follows_commonmark() -> None:
    assert open_fence("   ```py title") is not None and open_fence("    ```") is None
    assert open_fence("``` a`b") is None and open_fence("~~~ a`b") is not None
    fence = open_fence("````")
    assert fence is not None and not fence.closed_by("```") and fence.closed_by("`````  ")
    lines = ["a", "```js", "x", "~~~", "```", "b", "~~~", "open"]
    found = list(fenced_blocks(lines))
    assert [(b.start, b.end, b.fence.language) for b in found] == [(1, 4, "js"), (6, None, "")]


TABLE_UNIT_TEXT = (
    "Limits the runtime enforces.\n\n"
    "| Key | Type | Default |\n| --- | --- | --- |\n"
    "| `cors_origins` | list of strings | `[]` |\n"
    "| `max_question_chars` | int | `2000` |\n"
    "| `a\\|b` pipe | [x](https://evil.example) | **bold** |"
)


def test_a_passage_from_a_docs_table_is_quoted_as_a_table() -> None:
    def quoted(question: str) -> list[Any]:
        blocks = passages_blocks(question, [Unit("s", "Server", TABLE_UNIT_TEXT)])
        markdown = to_markdown(blocks)
        rendered = COMMONMARK.render(markdown)
        assert "href" not in rendered and "<table>" in rendered
        assert commonmark_text(markdown) == flat(blocks)
        inside: list[Any] = blocks[1]["c"]
        return inside

    parts = quoted("What is the default of max_question_chars?")
    assert [b["t"] for b in parts] == ["p", "table"]
    head, body = parts[1]["c"]
    header = [element("th", word) for word in ("Key", "Type", "Default")]
    assert head == element("thead", element("tr", *header))
    # The row that matched the question, under the table's header.
    assert body == element(
        "tbody",
        element(
            "tr",
            element("td", element("code", "max_question_chars")),
            element("td", "int"),
            element("td", element("code", "2000")),
        ),
    )
    # Docs text is never read as Markdown links; a pipe escaped in a cell is the cell's.
    (row,) = quoted("Which pipe and evil link is bold?")[1]["c"][1]["c"]
    assert row == element(
        "tr",
        element("td", element("code", "a|b"), " pipe"),
        element("td", "[x](https://evil.example)"),
        element("td", element("strong", "bold")),
    )
