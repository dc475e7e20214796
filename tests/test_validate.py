"""Stage 6 of a turn: the answer is checked in code, on the stream, before it renders."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest
from docpilot_runtime.bundle import Page
from docpilot_runtime.types import Citation
from docpilot_runtime.validate import (
    Source,
    StreamValidator,
    ValidatedAnswer,
    truncate_markdown,
    validate_actions,
    validate_answer,
)

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


def test_external_link_is_kept_only_when_an_excerpt_carried_it() -> None:
    allowed = ["https://openrouter.ai/keys"]
    result = check(
        f"Get a key at [OpenRouter](https://openrouter.ai/keys) or [here](https://evil.example/keys)"
        f" or <https://openrouter.ai/keys/> or <https://evil.example> {ASK}.",
        allowed_external=allowed,
    )
    assert result.markdown == (
        "Get a key at [OpenRouter](https://openrouter.ai/keys) or here"
        " or <https://openrouter.ai/keys/> or https://evil.example [1]."
    )
    assert result.delinked == ["https://evil.example/keys", "https://evil.example"]


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
    assert result.markdown == "click [1]"


def test_an_allowed_mailto_link_is_kept() -> None:
    result = check(
        f"Write to <support@example.com> {ASK}", allowed_external=["mailto:support@example.com"]
    )
    assert result.markdown == "Write to <support@example.com> [1]"


def test_images_become_their_alt_text() -> None:
    result = check(f"![a diagram](/img/flow.png) ![tracker](https://evil.example/p.gif) {ASK}")
    assert result.markdown == "a diagram tracker [1]"


def test_a_removed_marker_cannot_turn_a_link_into_an_image() -> None:
    result = check(
        f"![[bad]][ask](/reference/cli/#ask) and ! [[bad]][ask](/reference/cli/#ask) {ASK}"
    )
    # "\\!" renders as "!" and cannot start an image; the kept space does the same.
    assert result.markdown == "\\![ask](/reference/cli/#ask) and ! [ask](/reference/cli/#ask) [1]"


# -------------------------------------------------------------------------- HTML


@pytest.mark.parametrize(
    "hostile",
    [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        "<a href=javascript:alert(1)>click</a>",
        "<iframe src=//evil.example></iframe>",
        "<!-- <script>alert(1)</script> -->",
        "<svg/onload=alert(1)>",
        "\\<script>alert(1)\\</script>",
        "<div\nonclick=alert(1)>x</div>",
    ],
)
def test_hostile_html_is_neutralised(hostile: str) -> None:
    result = check(f"Before {ASK}. {hostile} after.")
    assert "<" not in result.markdown
    assert "&lt;" in result.markdown


def test_html_inside_code_stays_verbatim() -> None:
    markdown = f'Use `Vec<T>` {ASK}.\n\n```html\n<b onclick="x">bold</b>\n```\n'
    assert check(markdown).markdown == markdown.replace(ASK, "[1]")


def test_unclosed_backticks_cannot_make_later_text_code() -> None:
    # An unclosed run is escaped, so it cannot pair with a later one and leave what is
    # between them outside code.
    # A run with no closer on its own line is escaped, so a renderer cannot pair it
    # with a run on the next line and leave what is between them outside code.
    result = check(f"A ` stray {ASK}.\nThen `<b>` and `` <i> ``")
    assert result.markdown == "A \\` stray [1].\nThen `<b>` and `` <i> ``"


def test_a_removed_marker_cannot_merge_two_code_spans() -> None:
    result = check(f"`a`[[bad]]`<b>` {ASK}")
    assert result.markdown == "`a` `<b>` [1]"


def test_a_code_span_with_a_pipe_and_markup_is_not_trusted_as_code() -> None:
    # In a table row the pipe splits the cell, which would put "<b>" outside the span.
    result = check(f"| `a|<b>` | x |\n{ASK}")
    assert "<" not in outside_code(result.markdown) and "<b>" not in result.markdown


def test_fence_info_keeps_only_the_language() -> None:
    result = check(f'{ASK}\n```python onload="alert(1)"\nx = 1\n```')
    assert result.markdown == "[1]\n```python\nx = 1\n```"


def test_fenced_code_in_a_list_item_stays_code() -> None:
    markdown = f"1. Run {ASK}.\n   ```bash\n   cat <<EOF > out\n   ```\n2. Done."
    assert check(markdown).markdown == markdown.replace(ASK, "[1]")


def test_a_less_indented_line_is_kept_inside_the_fence() -> None:
    # In a list item, a line left of the fence would end the item, and the fence with it.
    result = check(f"- Run {ASK}.\n  ```\n  a\n<script>\n  ```\n")
    assert result.markdown == "- Run [1].\n  ```\n  a\n  <script>\n  ```\n"


def test_a_closing_line_only_a_list_reading_would_accept_is_escaped() -> None:
    # Five spaces close a fence opened at two only if it sits in a list item; escaped,
    # the line closes nothing in any reading and the block goes on.
    result = check(f"- Run {ASK}.\n  ```\n     ```\n  <b>\n  ```\n")
    assert result.markdown == "- Run [1].\n  ```\n     \\`\\`\\`\n  <b>\n  ```\n"


def test_an_indented_fence_opens_only_after_a_blank_line() -> None:
    # Right under a paragraph the line would continue the paragraph, not open a block.
    result = check(f"Text {ASK}\n    ```\n    <b>\n    ```")
    assert "<" not in result.markdown
    markdown = f"Text {ASK}\n\n    ```\n    <b>\n    ```"
    assert check(markdown).markdown == markdown.replace(ASK, "[1]")


def test_tildes_that_do_not_open_a_fence_here_are_escaped() -> None:
    # "- ~~~" opens a fence inside the list item for a renderer; it must not for ours.
    result = check(f"{ASK}\n- ~~~\n<b>\n~~strike~~")
    assert result.markdown == "[1]\n- \\~\\~\\~\n&lt;b&gt;\n~~strike~~"


def test_blockquote_markers_survive() -> None:
    assert check(f"> quoted {ASK}\n>> deeper").markdown == "> quoted [1]\n>> deeper"


def test_entities_are_left_alone() -> None:
    assert check(f"AT&amp;T &lt;tag&gt; R&D {ASK}").markdown == "AT&amp;T &lt;tag&gt; R&D [1]"


# ------------------------------------------------------------------------ length


def test_length_cap_cuts_at_a_sentence_boundary() -> None:
    sentence = "This sentence is about forty characters. "
    result = check(ASK + " " + sentence * 20, max_chars=300)
    assert result.truncated
    assert len(result.markdown) <= 300
    assert result.markdown.endswith("characters.")


def test_length_cap_prefers_a_paragraph_end() -> None:
    paragraph = "Word " * 30 + "end of paragraph\n\n"
    result = check(ASK + " " + paragraph * 10, max_chars=400)
    assert result.truncated and result.markdown.endswith("end of paragraph")


def test_length_cap_never_cuts_inside_a_fence() -> None:
    # The fence opens inside the cut window: the cut lands before it.
    text = (
        f"Intro {ASK}. " + "More words here. " * 14 + "\n\n```bash\n" + "echo hi\n" * 40 + "```\n"
    )
    result = check(text, max_chars=300)
    assert result.truncated and "```" not in result.markdown
    # The fence opened long before the window: the cut lands on a line end and closes it.
    text = f"Intro {ASK}.\n\n```bash\n" + "echo one two three\n" * 40 + "```\nAfter."
    result = check(text, max_chars=300)
    assert result.truncated and len(result.markdown) <= 300
    assert result.markdown.endswith("echo one two three\n```")
    assert result.markdown.count("```") == 2


def test_citations_cut_away_by_the_cap_are_not_listed() -> None:
    text = f"Start {ASK}. " + "Filler sentence here. " * 30 + f"Late {SETUP}."
    result = check(text, max_chars=300)
    assert [c.id for c in result.citations] == ["/reference/cli/#ask"]


def test_a_cut_between_a_space_and_a_marker_drops_the_citation() -> None:
    # No boundary in the window: the cut falls back to its start, which lies between
    # the tab held before the marker and the marker itself.
    text = f"- item\n***|a|b|\nSentence. \\[:![img](/a.png)`code <x>`\t{ASK}[t](<reference/cli/>)"
    result = check(text, max_chars=60)
    assert result.truncated and "[1]" not in result.markdown
    assert result.citations == []
    streamed, validator = stream(text, list(range(1, len(text), 3)), max_chars=60)
    assert streamed == "" and not validator.cited


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
]


def stream(text: str, cuts: list[int], max_chars: int = 6000) -> tuple[str, StreamValidator]:
    validator = StreamValidator(EMITTED, PAGES, max_chars=max_chars)
    pieces, start = [], 0
    for cut in [*cuts, len(text)]:
        pieces.append(validator.feed(text[start:cut]))
        start = cut
    pieces.append(validator.finish())
    return "".join(pieces), validator


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("max_chars", [6000, 700, 250])
def test_stream_equals_batch_over_random_splits(seed: int, max_chars: int) -> None:
    rng = random.Random(seed)
    for text in ANSWERS:
        batch = validate_answer(text, EMITTED, PAGES, max_chars=max_chars)
        for _ in range(40):
            cuts = sorted(rng.sample(range(1, len(text)), rng.randint(1, min(60, len(text) - 1))))
            streamed, validator = stream(text, cuts, max_chars)
            assert streamed == (batch.markdown if batch.citations else "")
            assert validator.cited == bool(batch.citations)
            assert validator.result() == batch


def test_stream_equals_batch_character_by_character() -> None:
    for text in ANSWERS:
        streamed, _ = stream(text, list(range(1, len(text))))
        assert streamed == validate_answer(text, EMITTED, PAGES).markdown


def test_a_marker_split_across_chunks_is_held_until_complete() -> None:
    validator = StreamValidator(EMITTED, PAGES)
    assert validator.feed(f"Intro {ASK} then") == "Intro [1] then"
    # Only the space that may precede a removed marker, and the marker, are held.
    assert validator.feed(" see [[/refer") == " see"
    assert validator.feed("ence/cli/#ask]] more") == " [1] more"
    assert validator.feed(" and [the cli](/refer") == " and"
    assert validator.feed("ence/cli/) end.") == " [the cli](/reference/cli/) end."
    assert validator.finish() == ""


def test_nothing_is_released_before_the_first_valid_citation() -> None:
    validator = StreamValidator(EMITTED, PAGES)
    assert validator.feed("A long opening paragraph with no citation yet.\n\n") == ""
    assert validator.feed("More text [[invented]] still nothing. ") == ""
    assert not validator.cited
    shown = validator.feed(f"Now cited {ASK} and more")
    assert validator.cited
    assert (
        shown
        == "A long opening paragraph with no citation yet.\n\nMore text still nothing. Now cited [1] and more"
    )
    assert validator.finish() == ""


def test_an_uncited_answer_is_never_shown() -> None:
    for text in [
        "No citations at all.",
        "Only an invented one [[/made/up/#x]].",
        "`[[/reference/cli/#ask]]` in code",
    ]:
        validator = StreamValidator(EMITTED, PAGES)
        assert validator.feed(text) == ""
        assert validator.finish() == ""
        assert not validator.cited
        assert validator.result().citations == []


def test_a_citation_the_cap_cuts_away_releases_nothing() -> None:
    text = "Filler sentence without sources. " * 20 + ASK
    streamed, validator = stream(text, list(range(10, len(text), 10)), max_chars=300)
    assert streamed == "" and not validator.cited


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
