"""Stage 1 over every field a reader controls: `credentials.screen_request` and the Unicode
normalisation the rules read through (pure: these also run under Pyodide).

A secret in `question` or `quote` settles the turn as `credential`; one in `page` or in any
field of a history item drops that field or item, and the turn goes on without it.
tests/serve/test_screening_api.py sends the same secrets through a running runtime.
"""

from __future__ import annotations

import json

import pytest
from docpilot_runtime.browser import worker as browser
from docpilot_runtime.screen.credentials import (
    find_credential,
    normalise_for_matching,
    screen_request,
)
from docpilot_runtime.shared.types import AskRequest, HistoryItem
from secrets_in_requests import (
    GITHUB,
    PASSWORD,
    PLACES,
    QUESTION,
    SECRETS,
    _body,
)

# --- normalisation -----------------------------------------------------------------------


def test_ascii_text_is_read_as_it_is() -> None:
    assert normalise_for_matching("password = x") == ("password = x", None)


@pytest.mark.parametrize(
    "space", ["\u00a0", "\u202f", "\u2007", "\u3000", "\u2009", "\u200b", "\ufeff", "\u2060"]
)
def test_unicode_spaces_and_invisible_characters_do_not_hide_a_password(space: str) -> None:
    text = f"my config has password{space}={space}{PASSWORD} in it"
    found = find_credential(text)
    assert found is not None and found.kind == "password_assignment"
    assert text[found.start : found.end] == PASSWORD  # the span is in the reader's text


def test_zero_width_characters_inside_a_key_are_removed_before_matching() -> None:
    hidden = GITHUB[:10] + "\u200b" + GITHUB[10:20] + "\u200d" + GITHUB[20:]
    found = find_credential(f"token: {hidden}")
    assert found is not None and found.kind == "github_token"
    assert f"token: {hidden}"[found.start : found.end] == hidden


def test_full_width_forms_are_read_as_ascii() -> None:
    wide = "".join(chr(ord(c) + 0xFEE0) for c in GITHUB)  # ｇｈｐ＿…
    normal, origin = normalise_for_matching(wide)
    assert normal == GITHUB and origin == list(range(len(wide)))
    found = find_credential(f"key {wide}")
    assert found is not None and found.kind == "github_token"


def test_combining_marks_compose_and_line_separators_become_newlines() -> None:
    normal, _ = normalise_for_matching("contrase\u006e\u0303a\u2028x")
    assert normal == "contraseña\nx"


# --- screen_request ----------------------------------------------------------------------


def test_a_secret_in_the_question_or_the_quote_settles_the_turn() -> None:
    asked = screen_request(AskRequest(question=SECRETS["github"][0]))
    assert asked.credential is not None and asked.field == "question"
    quoted = screen_request(AskRequest(question="why?", quote=SECRETS["password_nbsp"][0]))
    assert quoted.credential is not None and quoted.field == "quote"
    assert quoted.credential.kind == "password_assignment"


@pytest.mark.parametrize("place", PLACES)
def test_a_secret_in_page_or_history_drops_that_field_and_the_turn_goes_on(place: str) -> None:
    text, _ = SECRETS["openai"]
    clean = HistoryItem(question="And the theme?", kind="answer", markdown="See [1].")
    body = _body(place, text)
    dirty = [HistoryItem(**item) for item in body.get("history", [])]
    request = AskRequest(
        question=QUESTION, page=body.get("page", "/guide/"), history=(clean, *dirty)
    )
    screened = screen_request(request)
    assert screened.credential is None
    if place == "page":
        assert screened.dropped == ("page",)
        assert screened.request.page is None and screened.request.history == (clean,)
    else:
        assert screened.dropped == ("history[1]",)
        assert screened.request.history == (clean,) and screened.request.page == "/guide/"
    assert screened.request.question == QUESTION
    assert text not in repr(screened)


def test_a_clean_request_is_returned_unchanged() -> None:
    request = AskRequest(
        question=QUESTION,
        page="/guide/",
        history=(HistoryItem(question="hi", kind="social", markdown="Hello!"),),
    )
    assert screen_request(request).request is request
    assert screen_request(request).dropped == ()


def test_an_earlier_answer_quoting_a_vendors_example_key_blocks_nothing() -> None:
    docs = (
        "Set `aws_access_key_id = AKIAIOSFODNN7EXAMPLE` and "
        "`aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY`, then use "
        "Stripe's `sk_test_4eC39HqLyjWDarjtT1zdp7dc` [1]."
    )
    earlier = HistoryItem(question="how do I configure keys?", kind="answer", markdown=docs)
    screened = screen_request(AskRequest(question="and the region?", history=(earlier,)))
    assert screened.credential is None and screened.dropped == ()
    assert screened.request.history == (earlier,)


def test_browser_check_screens_quote_page_and_every_history_item() -> None:
    history = [
        {"question": "hi", "kind": "social", "markdown": "Hello!"},
        _body("history.summary", SECRETS["slack"][0])["history"][0],
    ]
    result = browser.check("and then?", None, json.dumps(history), SECRETS["aws"][0])
    assert result == {"credential": None, "dropped": ["page", "history[1]"]}
    quoted = browser.check("what is wrong?", SECRETS["password_nbsp"][0])["credential"]
    assert quoted is not None and quoted["field"] == "quote"
