"""Stage 6 of a turn: the answer is checked in code, on the stream, before it renders."""

from __future__ import annotations

import random
import re
import sys
from typing import Any

import pytest
from block_trees import hrefs
from docpilot_runtime.answer.actions import validate_actions
from docpilot_runtime.answer.memory import truncate_markdown
from docpilot_runtime.bundle.schema import Page
from docpilot_runtime.check.validate import (
    Piece,
    Source,
    StreamValidator,
    ValidatedAnswer,
    validate_answer,
)
from docpilot_runtime.shared.markdown_tree import MAX_DEPTH, Node, text_of
from docpilot_runtime.shared.types import Citation
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_reader import REFERENCE_READER

PAGES = [
    Page("/", "DocPilot", frozenset({"docpilot", "what-a-reader-gets"})),
    Page("/reference/cli/", "CLI", frozenset({"cli", "ask", "serve"})),
    Page("/guide/", "Guide", frozenset({"guide", "setup"})),
]
EMITTED = {
    "/reference/cli/#ask": Source("/reference/cli/#ask", "/reference/cli/#ask", "docpilot ask"),
    "/guide/#setup~2": Source("/guide/#setup~2", "/guide/#setup", "Setup"),
    "tool:plan_limits:1": Source("tool:plan_limits:1", "", "plan_limits"),
}
ASK = "[[/reference/cli/#ask]]"
SETUP = "[[/guide/#setup~2]]"


def check(markdown: str, **kwargs: object) -> ValidatedAnswer:
    return validate_answer(markdown, EMITTED, PAGES, **kwargs)  # type: ignore[arg-type]


COMMONMARK = REFERENCE_READER


def shown(result: ValidatedAnswer) -> str:
    """What the widget shows: the tree's text."""
    return shown_text(result.blocks)


def shown_text(blocks: list[Node]) -> str:
    return re.sub(r"\s+", "", text_of(blocks))


def commonmark_text(markdown: str) -> str:
    """The text a stock CommonMark renderer shows for ``markdown``."""
    rendered = COMMONMARK.render(markdown)
    plain = re.sub(r"<[^>]*>", "", rendered)
    plain = (
        plain.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&amp;", "&")
    )
    return re.sub(r"\s+", "", plain)




def depth(nodes: list[Node]) -> int:
    deepest, stack = 0, [(n, 1) for n in nodes]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict):
            deepest = max(deepest, level)
            stack.extend((c, level + 1) for c in node.get("c", []))
    return deepest


def outside_code(markdown: str) -> str:
    """The text outside fenced blocks and code spans, for checks on what may render."""
    markdown = re.sub(r"(?ms)^ {0,3}(`{3,}|~{3,}).*?^ *\1[ \t]*$", "", markdown)
    return re.sub(r"(`+)(?!`).+?(?<!`)\1(?!`)", "", markdown)


# --------------------------------------------------------------------- citations


def test_invented_citation_is_stripped_and_markers_renumber() -> None:
    result = check(f"First {SETUP}. Invented [[/guide/#nothing]]. Then {ASK} and {SETUP}.")
    assert result.markdown == "First [1]. Invented. Then [2] and [1]."
    assert result.citations == [
        Citation(1, "/guide/#setup~2", "/guide/#setup", "Setup"),
        Citation(2, "/reference/cli/#ask", "/reference/cli/#ask", "docpilot ask"),
    ]
    assert result.dropped_citations == ["/guide/#nothing"]


def test_an_id_that_exists_but_was_not_emitted_this_turn_is_invented() -> None:
    # /reference/cli/#serve is a real anchor, but no excerpt of this turn carried it.
    result = check(f"Serve it [[/reference/cli/#serve]] or ask {ASK}.")
    assert result.markdown == "Serve it or ask [1]."
    assert result.dropped_citations == ["/reference/cli/#serve"]


def test_marker_variants_the_models_write_are_understood() -> None:
    result = check(
        "Spaces [[ /reference/cli/#ask ]]. Adjacent [[/guide/#setup~2]][[tool:plan_limits:1]]. "
        "Listed [[/reference/cli/#ask, tool:plan_limits:1]]. Mixed [[nope, /guide/#setup~2]]."
    )
    assert result.markdown == "Spaces [1]. Adjacent [2][3]. Listed [1][3]. Mixed [2]."
    assert result.dropped_citations == ["nope"]


def test_a_bracket_short_around_an_emitted_id_still_cites_it() -> None:
    # Small models drop or add a bracket (issue 22): the id decides, not the brackets.
    result = check(
        "Close short [[/reference/cli/#ask]. Open short [/guide/#setup~2]]. "
        "Single [/reference/cli/#ask]. Stray [[/guide/#setup~2]]] and [[[/reference/cli/#ask]]."
    )
    assert result.markdown == (
        "Close short [1]. Open short [2]. Single [1]. Stray [2] and [1]."
    )
    assert result.dropped_citations == []


def test_short_brackets_around_anything_else_stay_text() -> None:
    result = check(f"Paths [/usr/bin/] and [[x] and [y]] stay {ASK}. A link [/guide/](/guide/).")
    assert shown(result) == "Paths[/usr/bin/]and[[x]and[y]]stay[1].Alink/guide/."
    assert result.dropped_citations == [] and hrefs(result.blocks) == ["/guide/"]


def test_numbers_in_double_brackets_and_lists_name_the_numbered_ids() -> None:
    numbered = ["/guide/#setup~2", "/reference/cli/#ask"]
    result = validate_answer(
        "Both [1, 2]. Second [[2]]. Third [3].", EMITTED, PAGES, answer_citations=numbered
    )
    assert result.markdown == "Both [1][2]. Second [2]. Third."
    assert [c.id for c in result.citations] == numbered
    assert result.dropped_citations == ["[3]"]


def test_a_repeated_id_in_one_group_is_shown_once() -> None:
    assert check(f"Twice {ASK}{ASK} and {ASK} {ASK}.").markdown == "Twice [1] and [1]."


def test_a_site_tool_observation_is_cited_without_a_link() -> None:
    result = check("The team plan allows 50,000 requests [[tool:plan_limits:1]].")
    assert result.markdown == "The team plan allows 50,000 requests [1]."
    assert result.citations == [Citation(1, "tool:plan_limits:1", "", "plan_limits")]


def test_a_removed_marker_takes_its_space_with_it() -> None:
    result = check(f"[[bad]] Starts here {ASK}.\nEnds [[bad]]\nMid [[bad]] word (see [[bad]]).")
    assert result.markdown == "Starts here [1].\nEnds\nMid word (see)."


def test_numbers_in_brackets_written_by_the_model_are_not_citations() -> None:
    result = check(f"As [3] says {ASK}.\n[1]: javascript:alert(1)")
    assert result.markdown == "As says [1].\n: javascript:alert(1)"


def test_a_marker_cannot_become_a_link_or_a_link_definition() -> None:
    result = check(f"{ASK}(javascript:alert(1))\n{ASK}: javascript:alert(1)")
    assert "[1](" not in result.markdown and "[1]:" not in result.markdown
    assert result.markdown.startswith("[1]\\(javascript:alert(1))")


def test_answer_call_citations_that_were_never_emitted_are_reported() -> None:
    result = check(f"Cited {ASK}.", answer_citations=["/reference/cli/#ask", "/made/up/"])
    assert result.dropped_citations == ["/made/up/"]
    assert [c.id for c in result.citations] == ["/reference/cli/#ask"]


def test_toml_array_tables_in_code_are_not_markers() -> None:
    result = check(f'Add a `[[providers]]` table {ASK}:\n\n```toml\n[[providers]]\nkind = "x"\n```')
    assert "`[[providers]]`" in result.markdown
    assert '```toml\n[[providers]]\nkind = "x"\n```' in result.markdown
    assert result.dropped_citations == []


# ------------------------------------------------------------------------- links


def test_invented_route_becomes_plain_text() -> None:
    result = check(f"See [the admin page](/admin/) {ASK}.")
    assert result.markdown == "See the admin page [1]."
    assert result.delinked == ["/admin/"]


def test_invented_anchor_becomes_plain_text() -> None:
    result = check(f"See [flags](/reference/cli/#flags) and [ask](/reference/cli/#ask) {ASK}.")
    assert result.markdown == "See flags and [ask](/reference/cli/#ask) [1]."
    assert result.delinked == ["/reference/cli/#flags"]


@pytest.mark.parametrize(
    ("written", "kept"),
    [
        ("/reference/cli/", "/reference/cli/"),
        ("/reference/cli", "/reference/cli/"),
        ("reference/cli/", "/reference/cli/"),
        ("../reference/cli/#serve", "/reference/cli/#serve"),
        ("/reference/cli/index.html#ask", "/reference/cli/#ask"),
        ("../reference/cli.md#ask", "/reference/cli/#ask"),
        ("/guide/?tab=1#setup", "/guide/#setup"),
        ('<reference/cli/> "The CLI"', "/reference/cli/"),
        ("/", "/"),
    ],
)
def test_site_link_spellings_resolve_to_the_page(written: str, kept: str) -> None:
    assert check(f"[here]({written}) {ASK}").markdown == f"[here]({kept}) [1]"


@pytest.mark.parametrize(
    "target",
    [
        "javascript:alert(1)",
        "JavaScript:alert(document.cookie)",
        "data:text/html;base64,PHNjcmlwdD4=",
        "mailto:support@example.com",
        "//evil.example/reference/cli/",
        "/\\evil.example",
        "vbscript:msgbox(1)",
    ],
)
def test_unsafe_link_targets_become_plain_text(target: str) -> None:
    result = check(f"[click]({target}) {ASK}")
    assert hrefs(result.blocks) == [] and "click" in shown(result)


def test_images_become_their_alt_text() -> None:
    result = check(f"![a diagram](/img/flow.png) ![tracker](https://evil.example/p.gif) {ASK}")
    assert result.markdown == "a diagram tracker [1]"


# -------------------------------------------------------------------------- HTML


@pytest.mark.parametrize(
    ("hostile", "seen"),
    [
        ("<script>alert(1)</script>", "alert(1) "),
        ("<img src=x onerror=alert(1)>", ""),
        ("<a href=javascript:alert(1)>click</a>", "click "),
        ("<iframe src=//evil.example></iframe>", ""),
        ("<!-- <script>alert(1)</script> -->", ""),
        ("<svg/onload=alert(1)>", ""),
        ("<div\nonclick=alert(1)>x</div>", "x "),
        ("&lt;b&gt;bold&lt;/b&gt;", "bold "),
        ("\\<b>bold\\</b>", "bold "),
        ("<<b>b>nested</b>", "nested "),
        ("&#xE000;0&#xE001; forged", "\ufffd0\ufffd forged "),
    ],
)
def test_raw_html_shows_its_text_content_never_its_tags(hostile: str, seen: str) -> None:
    result = check(f"{hostile} {ASK}")
    assert text_of(result.blocks) == f"{seen}[1]"
    rendered = COMMONMARK.render(result.markdown)  # raw HTML allowed: a careless reader
    assert not re.search(r"<(?!/?(p|a|code|pre|em|strong)\b)", rendered.replace("&lt;", ""))


def test_an_html_block_is_a_paragraph_of_its_text_content() -> None:
    result = check(f"Intro {ASK}.\n\n<div class=x>\n  <b>Block</b> &amp; text {ASK}\n</div>")
    assert result.blocks[1] == {"t": "p", "c": ["Block & text ", {"t": "cite", "n": 1}]}


@pytest.mark.parametrize(
    "link",
    [
        "[label](javascript:alert(1))",
        "[label](JaVaScRiPt:alert(1))",
        "[label](data:text/html;base64,PHNjcmlwdD4=)",
        "[label](vbscript:msgbox(1))",
        f"[label]({'https://evil.example/'})",
    ],
)
def test_a_rejected_link_shows_its_label_only(link: str) -> None:
    result = check(f"See {link} {ASK}")
    assert text_of(result.blocks) == "See label [1]"


@pytest.mark.parametrize(
    ("block", "seen"),
    [
        # Found by the hostile-answers property test in Chromium: the standard library's
        # HTML parser raises AssertionError on a "<![" it cannot name.
        ("<script>alert(1)</script><![```", "alert(1)"),
        (f"<div>before<![ x]>after {ASK}</div>", "beforeafter [1]"),
        (f"<div>a<![foo bar]>b {ASK}</div>", "ab [1]"),
        (f"<div>kept<![if x]>shown<![endif]> {ASK}</div>", "keptshown [1]"),
    ],
)
def test_an_unnamed_marked_section_in_html_is_a_comment_as_in_a_browser(
    block: str, seen: str
) -> None:
    result = check(f"Intro {ASK}.\n\n{block}")
    assert text_of(result.blocks[1:]) == seen


def test_html_and_markers_inside_code_stay_verbatim() -> None:
    result = check(f"Use `<b>{ASK}</b>` here {ASK}.\n\n```html\n<i>[[x]]</i>\n```")
    assert text_of(result.blocks) == f"Use <b>{ASK}</b> here [1].<i>[[x]]</i>\n"
    assert result.dropped_citations == []


def test_fence_info_keeps_only_the_language() -> None:
    result = check(f'Run {ASK}:\n\n```bash onclick="x" {{.class}}\nls\n```')
    assert result.blocks[1] == {"t": "pre", "c": ["ls\n"], "lang": "bash"}
    assert "onclick" not in result.markdown


# ------------------------------------------------------------- what readers see


@pytest.mark.parametrize(
    ("written", "seen"),
    [
        ("3 < 5 and a > b", "3 < 5 and a > b"),
        ("a &lt;script&gt; tag never prints", "a  tag never prints"),
        ("\\[x\\] is in brackets", "[x] is in brackets"),
        ("\\~\\~\\~ three tildes", "~~~ three tildes"),
        ("index list[0] first", "index list[0] first"),
        ("AT&T & co", "AT&T & co"),
    ],
)
def test_readers_see_what_commonmark_shows(written: str, seen: str) -> None:
    result = check(f"{written} {ASK}")
    assert text_of(result.blocks) == f"{seen} [1]"
    assert commonmark_text(result.markdown) == shown(result)


EVIL = "https://evil.example/?q=secret"
BRACKET_VARIANTS = [
    f"\\[text\\]({EVIL})",
    f"\\[text]({EVIL})",
    f"[text\\]({EVIL})",
    f"[te\nxt]({EVIL})",
    f"[text\n]({EVIL})",
    f"`[text`]({EVIL})",
    f"[`text]`({EVIL})",
    f"[{'x' * 1200}]({EVIL})",
    f"- [item\n  ]({EVIL})",
    f"> [quote\n> ]({EVIL})",
    f"- one\n  [two]({EVIL})",
    f"> a\n[lazy]({EVIL})",
    f"[a]: {EVIL}\n\n[a]",
    f"[a][b]\n\n[b]: {EVIL}",
    f"<{EVIL}>",
    f"![img]({EVIL})",
    f"[![img](/x.png)]({EVIL})",
    f"[[text]]({EVIL})",
    f"{ASK}({EVIL})",
    f"[x](<{EVIL}>)",
    f'[x]({EVIL} "title")',
    "[x](&#104;ttps://evil.example/)",
    f"*[x]({EVIL})*",
    f"[x]\n({EVIL})",
]


@pytest.mark.parametrize("variant", BRACKET_VARIANTS)
def test_no_bracket_trick_becomes_an_off_site_link(variant: str) -> None:
    result = check(f"See {ASK}.\n\n{variant}")
    assert not [href for href in hrefs(result.blocks) if "evil" in href]
    assert "evil.example/" not in "".join(
        re.findall(r'href="([^"]*)"', COMMONMARK.render(result.markdown))
    )


@pytest.mark.parametrize("marker", ["> ", "- ", "1. ", "* > "])
def test_deeply_nested_answer_is_capped_not_overflowing(marker: str) -> None:
    text = marker * (5900 // len(marker)) + f"deep {ASK}"
    result = check(text)
    assert depth(result.blocks) <= MAX_DEPTH
    assert commonmark_text(result.markdown) == shown(result)


# ------------------------------------------------------------------------ length


def test_citations_cut_away_by_the_cap_are_not_listed() -> None:
    text = f"Start {ASK}. " + "Filler sentence here. " * 30 + f"Late {SETUP}."
    result = check(text, max_chars=300)
    assert [c.id for c in result.citations] == ["/reference/cli/#ask"]


def test_truncate_markdown_closes_a_fence_it_cuts() -> None:
    text = "Intro.\n\n```python\n" + "print('x')\n" * 300 + "```\n"
    kept, truncated = truncate_markdown(text, 2000)
    assert truncated and len(kept) <= 2000 and kept.endswith("print('x')\n```")
    assert truncate_markdown("short", 2000) == ("short", False)


# --------------------------------------------------------------------- streaming

ANSWERS = [
    f"""To ask from the terminal, run `docpilot ask` with the built site {ASK}:

1. Build the site:
   ```bash
   mkdocs build && docpilot ask site/ "How?" > out.json
   ```
2. Read [the answer](/reference/cli/#ask). The **team** plan allows 50,000 requests [[tool:plan_limits:1]].

> Note: `Vec<T>` stays verbatim; see [setup](../guide/#setup) or [nowhere](/nope/#x).

| Option | Default |
|---|---|
| `--json` | off {ASK} |

Scores 3 > 2 & 1 < 2! Done [[/guide/#setup~2, /reference/cli/#ask]].
""",
    f"""Invented first [[/made/up/]] then real {SETUP}[[bad]] and <script>alert(1)</script>
<img src=x onerror=alert(1)> ![img](/a.png) [x](javascript:alert(1)) <https://evil.example>
[[ /reference/cli/#ask ]][[tool:plan_limits:1]] [3] `[[not a marker]]` \\[escaped\\] ~~~ ~~gone~~
![[bad]][ask](/reference/cli/#ask) `a`[[bad]]`<b>` [1]: javascript:x
""",
    f"Opening line. {ASK}\n\n"
    + "A sentence about setup that keeps going. " * 12
    + "\n\n```python\n"
    + "print('<b>')\n" * 12
    + "```\n\nClosing words [[tool:plan_limits:1]].",
    f"Uncited start, then a split [[/refer{''}ence/cli/#ask]] and [text [[/guide/#setup~2]]](/guide/#setup)"
    " and `` code ` with `` ticks, <not a tag, a > b, and a trailing [[open",
    # Blocks a blank line closes, and the containers it leaves open (loose lists, code).
    f"Intro {ASK}:\n- a\n- b\n\n- c, loose\n\n  still c\n\nPara after.\n\n    indented\n\n"
    f"    more code\n\n> quote {SETUP}\n\n> another quote\n\n# Heading\n\n1. one\n\n2) two\n\n"
    "Setext\n---\n\n* * *\n\nEnd.",
]


def stream(
    text: str, cuts: list[int], max_chars: int = 6000
) -> tuple[list[Piece], StreamValidator]:
    validator = StreamValidator(EMITTED, PAGES, max_chars=max_chars)
    pieces, start = [], 0
    for cut in [*cuts, len(text)]:
        pieces.append(validator.feed(text[start:cut]))
        start = cut
    pieces.append(validator.finish())
    return [p for p in pieces if p is not None], validator


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("max_chars", [6000, 700, 250])
def test_stream_equals_batch_over_random_splits(seed: int, max_chars: int) -> None:
    rng = random.Random(seed)
    for text in ANSWERS:
        cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(1, 40))))
        pieces, validator = stream(text, cuts, max_chars)
        batch = check(text, max_chars=max_chars)
        assert "".join(p.markdown for p in pieces) == batch.markdown
        assert [b for p in pieces for b in p.blocks] == batch.blocks
        assert validator.result() == batch
        assert len(batch.markdown) <= max_chars
        assert commonmark_text(batch.markdown) == shown(batch)


def test_stream_equals_batch_character_by_character() -> None:
    text = ANSWERS[0]
    pieces, _ = stream(text, list(range(1, len(text))))
    assert "".join(p.markdown for p in pieces) == check(text).markdown


def test_a_long_paragraph_streams_as_validated_drafts() -> None:
    text = f"Start {ASK}. " + "More words about the setup here. " * 60
    pieces, _ = stream(text, list(range(20, len(text), 20)))
    drafts = [p.draft for p in pieces if p.draft]
    assert len(drafts) >= 3, "the open paragraph is shown while it is written"
    assert all(text_of(d).startswith("Start [1].") for d in drafts)
    assert pieces[-1].draft == [] and "".join(p.markdown for p in pieces) == check(text).markdown


def test_a_cited_paragraph_settles_as_soon_as_its_blank_line_arrives() -> None:
    validator = StreamValidator(EMITTED, PAGES)
    shown = validator.feed(f"Run it {ASK}.\n")  # a draft: a setext underline could follow
    assert shown is not None and shown.blocks == [] and text_of(shown.draft) == "Run it [1]."
    piece = validator.feed("\n")
    assert piece is not None and text_of(piece.blocks) == "Run it [1]." and piece.draft == []


def test_a_list_is_released_once_the_next_block_begins_outside_it() -> None:
    validator = StreamValidator(EMITTED, PAGES)
    first = validator.feed(f"Steps {ASK}:\n\n- one\n\n")
    assert first is not None and [b["t"] for b in first.blocks] == ["p"]
    # Another item after the blank line continues the list (and makes it loose).
    assert validator.feed("- two\n\n  more of two\n\n") is None
    piece = validator.feed("A")  # the first character of a paragraph: the list is done
    assert piece is not None and [b["t"] for b in piece.blocks] == ["ul"]
    assert len(piece.blocks[0]["c"]) == 2  # type: ignore[index]


def test_nothing_is_released_before_the_first_valid_citation() -> None:
    validator = StreamValidator(EMITTED, PAGES)
    assert validator.feed("An opening paragraph with no citation.\n\n") is None
    assert validator.feed("Still none [[bad]].\n\nNow ") is None
    piece = validator.feed(f"one {ASK}.\n\nAfter.\n\n")
    assert piece is not None and piece.markdown.startswith("An opening paragraph")
    assert validator.cited


def test_text_shows_the_moment_its_first_citation_arrives() -> None:
    """A model that cites late in a block: what came before shows with the marker's
    closing bracket, not at the block's end."""
    validator = StreamValidator(EMITTED, PAGES)
    assert validator.feed("An opening paragraph, uncited.\n\n- a list item\n- and ") is None
    assert validator.feed(f"then one that cites {ASK[:-1]}") is None  # not a marker yet
    piece = validator.feed("]")
    assert piece is not None and text_of(piece.blocks) == "An opening paragraph, uncited."
    assert text_of(piece.draft) == "a list itemand then one that cites [1]"


def test_a_marker_naming_nothing_emitted_shows_nothing_early() -> None:
    validator = StreamValidator(EMITTED, PAGES)
    assert validator.feed("Text that cites [[/made/up/]] and ") is None
    assert validator.feed("`[[/reference/cli/#ask]]` only in code, then more") is None


def test_an_uncited_answer_is_never_shown() -> None:
    validator = StreamValidator(EMITTED, PAGES)
    text = "No citation here.\n\n" * 20 + "Invented [[/made/up/]]."
    assert validator.feed(text) is None and validator.finish() is None
    assert not validator.cited and validator.result().citations == []


def test_length_cap_holds_and_cuts_at_a_word() -> None:
    text = f"Start {ASK}. " + "Filler sentence here. " * 400
    result = check(text, max_chars=500)
    assert result.truncated and len(result.markdown) <= 500
    assert result.markdown.endswith(("here.", "here", "Filler", "sentence"))


def test_length_cap_never_leaves_a_fence_open() -> None:
    text = f"Intro {ASK}.\n\n```python\n" + "print('x')\n" * 600 + "```\n\nAfter."
    result = check(text, max_chars=1000)
    assert result.truncated and len(result.markdown) <= 1000
    assert result.markdown.endswith("print('x')\n```")
    assert result.blocks[-1]["t"] == "pre"


# ----------------------------------------------------------- hostile answers

HOSTILE_PIECES = [
    ASK,
    SETUP,
    "[[/made/up/]]",
    "[1]",
    "[",
    "]",
    "(",
    ")",
    "\\[",
    "\\]",
    "`",
    "``",
    "```",
    "~~~",
    "<",
    ">",
    "&lt;",
    "&amp;",
    "&#91;",
    "*",
    "**",
    "_",
    "!",
    "<https://evil.example/a>",
    f"]({EVIL})",
    "](/guide/#setup)",
    "](/reference/cli/#ask)",
    "[x]: https://evil.example/",
    "\n",
    "\n\n",
    "\n- ",
    "\n> ",
    "\n1. ",
    "\n    ",
    "\n```js\n",
    "\n# ",
    "  ",
    "text",
    "word",
    "<script>",
    "<img src=x>",
    "\\",
    "#",
    "|",
    "=",
    "---",
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(HOSTILE_PIECES), max_size=60))
def test_hostile_answers_read_the_same_to_commonmark_and_link_nowhere(parts: list[str]) -> None:
    result = check("".join(parts))
    assert commonmark_text(result.markdown) == shown(result)
    assert all(
        h.startswith(("/guide/", "/reference/cli/", "/#", "/")) and "evil" not in h
        for h in hrefs(result.blocks)
    )
    rendered = COMMONMARK.render(result.markdown)
    assert "evil.example" not in "".join(re.findall(r'(?:href|src)="([^"]*)"', rendered))
    assert depth(result.blocks) <= MAX_DEPTH


def calls(text: str) -> int:
    """Python function calls made validating ``text``: a cost that does not depend on
    the machine's speed."""
    count = 0

    def profile(_frame: Any, event: str, _arg: Any) -> None:
        nonlocal count
        if event == "call":
            count += 1

    sys.setprofile(profile)
    try:
        check(text, max_chars=10**7)
    finally:
        sys.setprofile(None)
    return count


@pytest.mark.parametrize(
    "unit",
    [
        f"A sentence about setup {ASK}. ",
        "[" * 7 + "x" + "]" * 3 + f"(/guide/#setup) {ASK} ",
        "`a` `` b ` c ``` d " + ASK + " ",
        f"> - quote and list {ASK}\n",
        f"*a **b [c]({EVIL}) <x> &amp; \\[ {ASK}\n\n",
    ],
)
def test_validation_cost_is_linear_in_the_answer_length(unit: str) -> None:
    small, large = calls(unit * 60), calls(unit * 600)
    assert large <= 13 * small, f"10x the text cost {large / small:.1f}x the calls"


# ----------------------------------------------------------------------- actions

DECLARED: list[dict[str, Any]] = [
    {
        "name": "open_upgrade",
        "description": "Offer this when the reader needs a higher plan.",
        "label": "Upgrade",
        "url": "https://example.com/upgrade?plan={plan}",
        "parameters": {
            "type": "object",
            "properties": {"plan": {"type": "string", "enum": ["team", "enterprise"]}},
            "required": ["plan"],
            "additionalProperties": False,
        },
    },
    {"name": "start_wizard", "parameters": {"type": "object", "properties": {}}},
    {"name": "no_arguments"},
    {"name": "broken_schema", "parameters": {"type": "no-such-type"}},
]


def test_unknown_action_is_dropped() -> None:
    assert validate_actions([{"name": "delete_account", "arguments": {}}], DECLARED) == []


def test_action_failing_its_schema_is_dropped() -> None:
    offered = [
        {"name": "open_upgrade", "arguments": {"plan": "free"}},
        {"name": "open_upgrade", "arguments": {}},
        {"name": "open_upgrade", "arguments": {"plan": "team", "url": "javascript:alert(1)"}},
        {"name": "no_arguments", "arguments": {"x": 1}},
        {"name": "broken_schema", "arguments": {}},
    ]
    assert validate_actions(offered, DECLARED) == []


def test_duplicate_action_is_dropped() -> None:
    offered = [
        {"name": "open_upgrade", "arguments": {"plan": "team"}},
        {"name": "open_upgrade", "arguments": {"plan": "team"}},
        {"name": "open_upgrade", "arguments": {"plan": "enterprise"}},
    ]
    kept = validate_actions(offered, DECLARED)
    assert [a["arguments"] for a in kept] == [{"plan": "team"}, {"plan": "enterprise"}]


def test_at_most_three_actions_remain_in_the_order_offered() -> None:
    offered = [
        {"name": "open_upgrade", "arguments": {"plan": "team"}},
        {"name": "start_wizard", "arguments": {}},
        {"name": "no_arguments", "arguments": {}},
        {"name": "open_upgrade", "arguments": {"plan": "enterprise"}},
    ]
    kept = validate_actions(offered, DECLARED)
    assert [a["name"] for a in kept] == ["open_upgrade", "start_wizard", "no_arguments"]
    assert len(validate_actions(offered, DECLARED, limit=1)) == 1


def test_label_and_url_come_from_the_declaration_not_the_model() -> None:
    offered = [
        {
            "name": "open_upgrade",
            "arguments": {"plan": "team"},
            "label": "Free money",
            "url": "https://evil.example",
        }
    ]
    assert validate_actions(offered, DECLARED) == [
        {
            "name": "open_upgrade",
            "arguments": {"plan": "team"},
            "label": "Upgrade",
            "url": "https://example.com/upgrade?plan={plan}",
            "description": "Offer this when the reader needs a higher plan.",
        }
    ]


def test_arguments_sent_as_json_text_are_read() -> None:
    offered = [{"name": "open_upgrade", "arguments": '{"plan": "team"}'}]
    assert validate_actions(offered, DECLARED)[0]["arguments"] == {"plan": "team"}


@pytest.mark.parametrize(
    "offered",
    [
        None,
        "open_upgrade",
        3,
        {"name": "open_upgrade"},
        [None, 1, "x", [], {"name": 5}],
        [{"name": "open_upgrade", "arguments": "{not json"}],
        [{"name": "open_upgrade", "arguments": [1]}],
        [{"name": "open_upgrade", "arguments": {"plan": {1, 2}}}],
    ],
)
def test_malformed_actions_are_dropped_never_raised(offered: object) -> None:
    assert validate_actions(offered, DECLARED) == []


def test_malformed_declarations_are_ignored() -> None:
    declared = [None, "x", {"description": "no name"}, {"name": "ok"}]
    kept = validate_actions([{"name": "ok", "arguments": {}}], declared)  # type: ignore[arg-type]
    assert kept == [{"name": "ok", "arguments": {}}]
