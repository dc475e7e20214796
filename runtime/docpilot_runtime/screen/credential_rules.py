"""The credential rules as typed Python values, read from the data file `credential_rules.json`.

The rules are plain data so that every engine shares one copy: this Python engine
(`credentials.py`, which runs on the server and under Pyodide in the reader's browser) and
any other (a JavaScript or edge-worker port reads the same JSON). This module only loads and
compiles them; what each table means is said here, how they are applied in `credentials.py`.

`token_formats` holds one row per credential format a vendor documents publicly
(benchmarks/credentials/SOURCES.md names the documents): a regex whose `body` group is the part
that must look random, plus lower-case hints: the regex only runs when one of its hints occurs
in the lower-cased question, which keeps a question with no candidate at a few microseconds
however long the table grows. Order matters only between rows that can match the same text: the
more specific row first (Anthropic and OpenRouter before the generic `sk-` row). Regexes are
written to stay linear: every repeat is bounded or possessive, and each row starts with a
literal (or a lookbehind and a literal), so no input makes them backtrack. A row adds a new
format; a word added to a list below widens or narrows what counts as a stand-in or a name.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RULES_FILE = Path(__file__).with_name("credential_rules.json")


@dataclass(frozen=True)
class TokenFormat:
    """One vendor credential format: where it starts, what it is called, what must be random."""

    kind: str
    label: str
    pattern: re.Pattern[str]
    hints: tuple[str, ...]
    context: re.Pattern[str] | None = None  # must also occur somewhere in the question
    span_is_body: bool = False  # the regex starts with the secret's name; highlight the value
    # True when every hint is the token's literal start: the row is then tried only where a
    # run of token characters begins with one; other rows search the whole question.
    at_start: bool = True


class RulesError(ValueError):
    """The rules file is malformed; the message names the file, the table and the row."""


# A token ends where a run of token characters does ("." may follow: the end of a sentence).
_END = r"(?![A-Za-z0-9_\-])"


def _token_format(row: Any, where: str) -> TokenFormat:
    if not isinstance(row, dict) or not {"kind", "label", "regex", "hints"} <= row.keys():
        raise RulesError(f"{where}: expected an object with kind, label, regex and hints")
    try:
        named = bool(row.get("named", False))
        return TokenFormat(
            kind=str(row["kind"]),
            label=str(row["label"]),
            pattern=re.compile(str(row["regex"]) + _END),
            hints=tuple(str(hint) for hint in row["hints"]),
            context=re.compile(row["context"]) if row.get("context") else None,
            span_is_body=named,
            at_start=bool(row.get("at_start", True)) and not named,
        )
    except re.error as exc:
        raise RulesError(f"{where}: regex does not compile ({exc})") from None


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RulesError(f"{path.name}: cannot read the credential rules ({exc})") from None
    if not isinstance(data, dict):
        raise RulesError(f"{path.name}: expected a JSON object at the top level")
    return data


_RULES = _load(RULES_FILE)


def _words(table: str) -> tuple[str, ...]:
    value = _RULES.get(table)
    if not isinstance(value, list) or not all(isinstance(word, str) for word in value):
        raise RulesError(f"{RULES_FILE.name}: {table}: expected a list of strings")
    return tuple(value)


def _mapping(table: str) -> dict[str, str]:
    value = _RULES.get(table)
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise RulesError(f"{RULES_FILE.name}: {table}: expected an object of strings")
    return dict(value)


_FORMAT_ROWS = _RULES.get("token_formats")
if not isinstance(_FORMAT_ROWS, list):
    raise RulesError(f"{RULES_FILE.name}: token_formats: expected a list of rows")
TOKEN_FORMATS: tuple[TokenFormat, ...] = tuple(
    _token_format(row, f"{RULES_FILE.name}: token_formats[{i}]")
    for i, row in enumerate(_FORMAT_ROWS)
)
# Where a token starts is checked against these: a regex that opens with its literal prefix
# lets `re` jump between occurrences of that prefix, one that opens with a lookbehind tries
# every position, which is twenty times slower.
TOKEN_CHARS: frozenset[str] = frozenset(str(_RULES.get("token_chars", "")))

# Words that mark a value as a stand-in when they occur anywhere in it (case-insensitive).
# Random bodies of the lengths we accept contain one of these by chance well under 0.1% of
# the time; real keys that vendors print as examples almost always contain one.
PLACEHOLDER_WORDS = _words("placeholder_words")
# How a value says "look it up elsewhere" instead of being the secret itself.
REFERENCE_MARKERS = _words("reference_markers")
# Passwords that documentation, tutorials and container images use as defaults. Matched after
# lower-casing, undoing leetspeak (`leet`) and stripping trailing digits and punctuation, so
# "P@ssw0rd!" and "admin123" land here too.
WEAK_PASSWORDS = frozenset(_words("weak_passwords"))
LEET = str.maketrans(_mapping("leet"))
# Keys vendors and standards print in their documentation (Stripe's test keys, jwt.io's
# token, Azurite's account key …), so readers paste them while following along; values with
# EXAMPLE/xxxx are caught by PLACEHOLDER_WORDS, these are the ones that look random.
VENDOR_EXAMPLES = frozenset(_words("vendor_examples"))
# Values that are public by design: publishable payment keys, public-key material, client ids.
PUBLIC_VALUE_PREFIXES = _words("public_value_prefixes")

# --- Names that say a value is a secret (a word, a suffix, or a stem in a script without
# inflection-free words) ----------------------------------------------------------------
PASSWORD_WORDS = frozenset(_words("password_words"))
PASSWORD_SUFFIXES = _words("password_suffixes")
PASSWORD_STEMS = _words("password_stems")
SECRET_WORDS = frozenset(_words("secret_words"))
SECRET_SUFFIXES = _words("secret_suffixes")
SECRET_STEMS = _words("secret_stems")
# Words for "key", which alone is too vague (primary key, cache key): these count only next
# to a qualifier such as "API" or "access", or in an env-style name such as STRIPE_KEY.
KEY_WORDS = frozenset(_words("key_words"))
KEY_STEMS = _words("key_stems")
KEY_QUALIFIERS = frozenset(_words("key_qualifiers"))
# Regex alternatives that find a candidate name in the lower-cased text.
NAME_KEYWORDS = _words("name_keywords")
# A name containing any of these describes something about a secret, or something else that
# happens to be called a key or token: never the secret itself.
NAME_STOP_WORDS = frozenset(_words("name_stop_words"))
# A word just before a name that makes it something other than a secret ("public key").
PREVIOUS_STOP_WORDS = frozenset(_words("previous_stop_words"))
# Filler a reader puts between a name and its value in prose: "my token is …".
PROSE_FILLERS = frozenset(_words("prose_fillers"))
# Password words that are also ordinary words; they name a password only in syntax
# (`DB_PASS=…`, `--pass …`), not in running text.
VERB_LIKE_PASSWORD_WORDS = frozenset(_words("verb_like_password_words"))

# --- Values that look random but are not secrets -----------------------------------------
# First segments that name public keys, digests and object ids (Stripe `pi_`, OpenAI `file-`,
# Anthropic `msg_`).
ID_PREFIXES = frozenset(_words("id_prefixes"))
# First segments that say what follows is a secret (`sk_`, `api-`, `pat-`): behind one of
# these even a UUID body is a key, where behind `req_` or `user-` it is an identifier.
SECRET_PREFIXES = frozenset(_words("secret_prefixes"))
# The HMAC secrets documentation samples sign JWTs with (jwt.io's defaults): a token signed
# with one of these can be minted by anyone, whatever its claims, so it is not a secret. A
# token with sample claims ("John Doe") but another signature was signed by someone's key.
JWT_SAMPLE_SECRETS = _words("jwt_sample_secrets")
# Words near a hex value that make it a digest, not a key.
HASH_WORDS = _words("hash_words")
# Authorization schemes whose credential cannot be replayed.
UNREPLAYABLE_SCHEMES = frozenset(_words("unreplayable_schemes"))
# The PEM header's first word, and what to call the key.
PEM_LABELS = _mapping("pem_labels")
# Command lines that carry a password without naming it (`mysql -pSECRET`, `curl -u u:p`).
CLI_COMMANDS = _words("cli_commands")
