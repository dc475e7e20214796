"""Secrets a reader might paste, and a request body carrying one in each place it can go:
shared by the screening tests of the core (tests/screen) and of the HTTP API (tests/serve)."""

from __future__ import annotations

import random
import string
from typing import Any

QUESTION = "How do I exclude a page from the assistant?"


_RNG = random.Random(9)  # seeded: a failure reproduces; no vendor published these values


def _random(alphabet: str, n: int) -> str:
    return "".join(_RNG.choices(alphabet, k=n))


_ALNUM = string.ascii_letters + string.digits


# (what a reader pastes, a fragment of the secret no log or body may contain)
GITHUB = "ghp_" + _random(_ALNUM, 36)


OPENAI = "sk-proj-" + _random(_ALNUM, 48)


AWS_SECRET = _random(_ALNUM + "+/", 40)


SLACK = f"xoxb-{_random(string.digits, 12)}-{_random(string.digits, 12)}-{_random(_ALNUM, 24)}"


PASSWORD = "Kq7#mZ2!" + _random(_ALNUM, 6)


PG_PASSWORD = _random(_ALNUM, 20)


SECRETS: dict[str, tuple[str, str]] = {
    "github": (f"my token is {GITHUB}", GITHUB[4:]),
    "openai": (f"OPENAI_API_KEY={OPENAI}", OPENAI[8:]),
    "aws": (f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET),
    "slack": (f"the bot uses {SLACK} now", SLACK[5:]),
    # The measured defect: a no-break space on each side of "=".
    "password_nbsp": (f"password\u00a0=\u00a0{PASSWORD}", PASSWORD),
    "postgres": (f"postgres://app:{PG_PASSWORD}@db.internal:5432/app", PG_PASSWORD),
}


PLACES = ("page", "history.question", "history.markdown", "history.summary", "history.quote")


def _body(place: str, text: str) -> dict[str, Any]:
    """An ask body with `text` in one reader-controlled field other than the question."""
    if place == "page":
        return {"question": QUESTION, "page": f"/guide/{text}"}
    item: dict[str, Any] = {
        "question": "How do I install the plugin?",
        "kind": "answer",
        "markdown": "Add `docpilot` to the plugins list.",
        "summary": "installing",
        "quote": "plugins: [docpilot]",
    }
    item[place.removeprefix("history.")] = f"{item[place.removeprefix('history.')]} {text}"
    return {"question": QUESTION, "history": [item]}
