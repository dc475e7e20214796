"""Credentials in disguise (issue 27, finding 4): the shapes a hostile or careless paste took
past the check, each in every field a reader controls. Pure standard library: these also
run under Pyodide, where the widget runs the same check.

Every value is synthetic (a seeded generator); the shapes are the ones the issue reported:
an assignment after a prose lead ("my key is NAME = …"), an `Authorization: Bearer` header
in prose, a JWT with a documentation sample's claims but its own signature, look-alike
letters from other scripts in a prefix, a no-break space or a line break inside a token,
percent-encoded characters, and a token at the end of a URL path.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import random
import string

import pytest
from docpilot_runtime.screen.credentials import find_credential, screen_request
from docpilot_runtime.shared.types import AskRequest, HistoryItem

_rng = random.Random(2727)
ALNUM = string.ascii_letters + string.digits


def rand(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


OPAQUE = rand(ALNUM, 40)  # a value with no vendor prefix: known only by its name
PASSWORD = "Vq4!" + rand(ALNUM, 10)
GITHUB = "ghp_" + rand(ALNUM, 36)
STRIPE = "sk_live_51" + rand(ALNUM, 97)
SLACK = f"xoxb-{rand(string.digits, 12)}-{rand(string.digits, 13)}-{rand(ALNUM, 24)}"
AWS_ID = "AKIA" + rand("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)
OPENAI = "sk-proj-" + rand(ALNUM, 48)

# jwt.io's sample header and claims, signed with a key that is not the sample's.
SAMPLE_HEADER = b64url(b'{"alg":"HS256","typ":"JWT"}')
SAMPLE_CLAIMS = b64url(b'{"sub":"1234567890","name":"John Doe","iat":1516239022}')
_SIGNED = f"{SAMPLE_HEADER}.{SAMPLE_CLAIMS}"
RESIGNED = f"{_SIGNED}.{b64url(hmac.new(OPAQUE.encode(), _SIGNED.encode(), hashlib.sha256).digest())}"

# Letters of other scripts that look like Latin ones: Cyrillic р (er), ѕ (dze), Greek Α Κ Ι.
HOMOGLYPHS = {
    "cyrillic_er_in_ghp": "gh\u0440_" + GITHUB[4:],
    "cyrillic_dze_in_sk": "\u0455k-proj-" + OPENAI[8:],
    "greek_capitals_in_akia": "\u0391\u039a\u0399\u0391" + AWS_ID[4:],
    "cyrillic_o_in_xoxb": "x\u043exb-" + SLACK[5:],
}

DISGUISES: dict[str, str] = {
    "assignment_after_key_is": f"my key is OPENAI_API_KEY = {OPAQUE}",
    "assignment_after_password_is": f"my password is DB_PASSWORD={PASSWORD} for staging",
    "env_line_in_prose": f"the server still fails with DB_PASSWORD={PASSWORD} set, why?",
    "bearer_header_in_prose": f"the header I send is Authorization: Bearer {OPAQUE} and it fails",
    "bearer_header_after_token_is": f"my token is Authorization: Bearer {OPAQUE}",
    "jwt_sample_claims_other_signature": f"my session cookie is {RESIGNED}",
    **{f"homoglyph_{name}": f"is this key right? {value}" for name, value in HOMOGLYPHS.items()},
    "nbsp_inside_token": f"my token is {GITHUB[:17]}\u00a0{GITHUB[17:]}",
    "nbsp_inside_a_bare_token": f"does {GITHUB[:17]}\u00a0{GITHUB[17:]} still work?",
    "newline_inside_a_bare_token": f"the log shows {STRIPE[:50]}\n{STRIPE[50:]}\nthen stops",
    "narrow_nbsp_inside_token": f"key: {STRIPE[:30]}\u202f{STRIPE[30:]}",
    "newline_inside_token": f"token:\n{GITHUB[:20]}\n{GITHUB[20:]}\nwhy is it refused?",
    "crlf_inside_token": f"STRIPE_KEY=\r\n{STRIPE[:40]}\r\n{STRIPE[40:]}",
    "percent_encoded_underscore": "see ghp%5F" + GITHUB[4:],
    "percent_encoded_prefix_letters": "token=%67%68%70_" + GITHUB[4:],
    "percent_encoded_dashes": "sk%2Dproj%2D" + OPENAI[8:],
    "token_in_a_path": f"GET /docs/{GITHUB} returns 404",
    "token_after_api_path": f"POST /api/ask/{STRIPE}",
    "token_in_a_url": f"I opened https://docs.example.com/hooks/{SLACK} by mistake",
    "aws_id_in_a_path": f"/buckets/{AWS_ID}/logs",
}


@pytest.mark.parametrize("name", sorted(DISGUISES))
def test_a_disguised_credential_is_found(name: str) -> None:
    assert find_credential(DISGUISES[name]) is not None, DISGUISES[name]


@pytest.mark.parametrize("name", sorted(DISGUISES))
def test_the_span_covers_the_secret_in_the_readers_text(name: str) -> None:
    text = DISGUISES[name]
    found = find_credential(text)
    assert found is not None
    shown = text[found.start : found.end]
    # The span is in the text as typed: what it covers holds a long stretch of the secret.
    assert 0 <= found.start < found.end <= len(text)
    assert len(shown) >= 12 and not shown.isspace()


PLACES = ("question", "quote", "page", "history.question", "history.markdown",
          "history.summary", "history.quote")


def request_with(place: str, text: str) -> AskRequest:
    if place in ("question", "quote"):
        return AskRequest(question=text if place == "question" else "What is this?",
                          quote=text if place == "quote" else None)
    if place == "page":
        return AskRequest(question="What is this?", page=f"/guide/{text}")
    fields = {"question": "How do I install it?", "kind": "answer",
              "markdown": "Add it to the plugins.", "summary": "installing", "quote": "pip"}
    fields[place.removeprefix("history.")] = text
    return AskRequest(question="What is this?", history=(HistoryItem(**fields),))


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("name", sorted(DISGUISES))
def test_a_disguised_credential_is_stopped_in_every_field(place: str, name: str) -> None:
    screened = screen_request(request_with(place, DISGUISES[name]))
    if place in ("question", "quote"):
        assert screened.credential is not None and screened.field == place
    else:
        assert screened.dropped == (place.split(".")[0] if place == "page" else "history[0]",)


# --- what must stay clean ---------------------------------------------------------------

CLEAN = [
    # Other scripts, and scripts mixed in one sentence.
    "Как настроить ключ API для плагина docpilot в mkdocs.yml?",
    "Где хранится пароль от базы данных, в .env или в docpilot.toml?",
    "Το κλειδί API μπαίνει στο αρχείο ρυθμίσεων;",
    "Используйте pip install mkdocs-docpilot и mkdocs build",
    "Kλειδί ή key; Ποιο όνομα έχει η μεταβλητή OPENAI_API_KEY;",
    # No-break spaces and line breaks in ordinary text.
    "The limit is 10\u00a0000 requests per day and 2\u00a0MB per body.",
    "Set the variable\nOPENAI_API_KEY\nin your shell, then run mkdocs build",
    "Use the prefix ghp_\nfor classic tokens, as GitHub documents",
    # Percent-encoding in ordinary URLs.
    "https://docs.example.com/search/?q=api%20key%20rotation&page=2",
    "the page /guides/deploying%2Dthe%2Druntime/ is missing",
    # Paths and URLs without a secret.
    "GET /docs/guides/deploying-the-runtime/ returns 404",
    "https://github.com/encode/starlette/blob/master/starlette/routing.py",
    # Prose with names and no value.
    "my key is OPENAI_API_KEY, where do I put it?",
    "the header is Authorization: Bearer <token>, right?",
    "my password is DB_PASSWORD=${DB_PASSWORD} in the compose file",
    # The documentation sample itself.
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9l"
    "IiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
]


@pytest.mark.parametrize("text", CLEAN)
def test_ordinary_text_in_other_scripts_and_encodings_is_not_flagged(text: str) -> None:
    assert find_credential(text) is None, find_credential(text)


def test_a_jwt_signed_with_the_samples_published_secret_is_not_flagged() -> None:
    # Anyone can mint one with jwt.io's default secret: it proves nothing.
    signing = f"{SAMPLE_HEADER}.{b64url(json.dumps({'sub': 'u-1', 'admin': True}).encode())}"
    mac = hmac.new(b"your-256-bit-secret", signing.encode(), hashlib.sha256).digest()
    assert find_credential(f"my cookie is {signing}.{b64url(mac)}") is None


@pytest.mark.parametrize("text", [
    "key=" * 500,
    "/a" * 1000,
    "ghp_" + "\n".join(["aaaaaaaaaaaaaaaa"] * 120),
    "%5F" * 660,
    "my key is " * 200,
    "gh\u0440_" * 500,
    "x\u00a0" * 1000,
])
def test_hostile_shapes_of_these_rules_stay_fast(text: str) -> None:
    import time

    started = time.perf_counter()
    find_credential(text[:2000])
    assert time.perf_counter() - started < 1.0  # milliseconds when idle; a wide bound
