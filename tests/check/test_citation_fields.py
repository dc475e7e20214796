"""Each citation names its page and carries a short preview of its section, wherever
citations are made (passages answers, a model's validated answer)."""

from __future__ import annotations

from dataclasses import asdict

from docpilot_runtime.bundle.schema import UnitRecord
from docpilot_runtime.check.citations import unit_source
from docpilot_runtime.check.validate import validate_answer
from docpilot_runtime.reply.passages import EXCERPT_CHARS, page_title_of, preview
from docpilot_runtime.reply.results import passages_result
from docpilot_runtime.shared.types import TurnBasis

LONG = "Open any page and press A. " * 20
UNITS = [
    UnitRecord("/start/#4-ask", "/start/#4-ask", "4. Ask something", ("Quick start",), LONG, 0),
    UnitRecord("/start/", "/start/", "Quick start", (), "```yaml\nkey: 1\n```\nShort.", 0),
]


def test_a_section_is_titled_by_its_page_and_a_page_top_by_itself() -> None:
    assert page_title_of("4. Ask something", ("Quick start", "Steps")) == "Quick start"
    assert page_title_of("Quick start", ()) == "Quick start"


def test_a_preview_is_one_line_cut_at_a_word_within_the_limit() -> None:
    cut = preview(LONG)
    assert len(cut) <= EXCERPT_CHARS and cut.endswith("…")
    assert LONG.startswith(cut[:-1]) and LONG[len(cut) - 1] == " "  # cut between words
    assert preview("```yaml\nkey: 1\n```\nShort\n text.") == "key: 1 Short text."
    assert preview("Short.") == "Short."


def test_passages_citations_carry_page_title_and_excerpt() -> None:
    result = passages_result("how do I ask", UNITS, TurnBasis("t", "h"))
    cited = [asdict(c) for c in result.citations]
    assert [(c["title"], c["page_title"]) for c in cited] == [
        ("4. Ask something", "Quick start"),
        ("Quick start", "Quick start"),
    ]
    assert cited[0]["excerpt"] == preview(LONG)
    assert cited[1]["excerpt"] == "key: 1 Short."


def test_a_validated_model_answer_keeps_the_sources_page_and_excerpt() -> None:
    source = unit_source(*UNITS[0][:5])
    validated = validate_answer("Press A [[/start/#4-ask]].", {source.id: source}, [])
    (citation,) = validated.citations
    assert (citation.page_title, citation.excerpt) == ("Quick start", preview(LONG))
