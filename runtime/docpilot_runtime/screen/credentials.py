"""Stage 1 of a turn: stop a question that carries a credential before anything else sees it.

Readers paste secrets into question boxes: the key from the error message, the `.env` they are
debugging, a `curl` line with its `Authorization` header. Once a question reaches retrieval,
a model provider, a log or the conversation memory, the secret has leaked and cannot be
called back. So this check runs first, in the browser (under Pyodide, before the question
leaves the page) and again on the server, and a finding ends the turn: the reader is told what
was recognised and to rotate it. It is pure standard-library Python, synchronous and
network-free, and costs tens of microseconds for an ordinary question.

Three tiers, most specific first; the first tier with a finding wins, and within a tier the
leftmost finding:

The rules are data (`credential_rules.json`, typed by `credential_rules`): vendor formats,
placeholder and name vocabularies, in every language; the engine that applies them is this
module with `formats` (tiers 1-2), `named` (tier 3), `values` and `normalise`.
`screen_request` runs it over every field of a request a reader controls.

1. Vendor formats (`token_formats` in the rules): prefixed keys such as `ghp_…`,
   `sk-proj-…`, `AKIA…`, webhook URLs, and a few keys recognised by their name (an AWS secret
   access key after `aws_secret_access_key`).
2. Structure: PEM private-key blocks (even partial), headerless DER private-key bodies, JWTs.
3. Context: URLs and connection strings with a password; `name = value` assignments in env,
   YAML, JSON, TOML, XML, code and CLI flags, and the same in prose ("my API key is …") in
   several languages; `Authorization` headers; random tokens behind an unknown vendor prefix.

Every candidate must also look real. A value is a stand-in, never flagged, when it contains a
placeholder word (EXAMPLE, your, xxxx, dummy …), refers to a secret kept elsewhere (`${VAR}`,
`{{ secrets.X }}`, `process.env.X`, `%(password)s`), is a vendor's published example (AWS's
AKIAIOSFODNN7EXAMPLE, Stripe's documented test key, jwt.io's token), is public by design
(`pk_live_…`, `ssh-rsa AAAA…`, PEM public keys, a Supabase anon JWT), or is made of runs,
sequences or repeats. Random parts must pass an entropy floor sized to their length.

Decisions worth knowing:

* Stripe test-mode secret keys (`sk_test_`, `rk_test_`) are flagged: they authenticate as the
  account in test mode (customers, webhooks, API logs), and Stripe asks for them to be kept
  secret like live keys. Stripe's own documented test keys are exempt.
* Passwords that tutorials and container images use as defaults (`postgres:postgres`,
  `guest`, `changeme`, `password123`, `admin123`, `P@ssw0rd`, `hunter2`) are not flagged: a
  reader asking about docker-compose should not be refused, and such a password protects
  nothing. A password assignment needs 8+ characters and three character classes, or a
  random-looking value.
* A bare hex string, UUID, SHA or digest is never a credential by itself; next to a secret
  name (`api_key = "…"`) it is.
* An AWS account or Twilio account SID alone is an identifier, not a secret.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields, replace
from pathlib import Path

from docpilot_runtime.screen.credential_match import CredentialMatch
from docpilot_runtime.screen.formats import (
    structured_secrets,
    vendor_tokens,
)
from docpilot_runtime.screen.named import (
    contextual_secrets,
)
from docpilot_runtime.screen.normalise import (
    normalise_for_matching,
    span_in_original,
)
from docpilot_runtime.shared.framing import ENGLISH, Framing
from docpilot_runtime.shared.types import AskRequest

__all__ = [
    "CredentialMatch",
    "Screened",
    "carries_credential",
    "check_version",
    "credential_reply",
    "find_credential",
    "normalise_for_matching",
    "screen_request",
]


_CHECK_FILES = ("credential_rules.json", "credential_rules.py", "credential_match.py",
                "credentials.py", "formats.py", "named.py", "normalise.py", "values.py")


def check_version() -> str:
    """A fingerprint of the rules and the code that apply them: it changes whenever what
    the check finds may change (the records are swept again with a new one). Server side:
    Pyodide's standard library has no hashlib."""
    import hashlib

    digest = hashlib.sha256()
    for name in _CHECK_FILES:
        digest.update(name.encode() + b"\0" + (Path(__file__).parent / name).read_bytes())
    return digest.hexdigest()[:16]


def find_credential(text: str) -> CredentialMatch | None:
    """Return the credential `text` carries, the most specific kind first; None when clean.

    The rules read the text after `normalise_for_matching`; the span refers to `text`."""
    if len(text) < 8:
        return None
    normal, origin = normalise_for_matching(text)
    found = _find_normalised(normal)
    if found is None or origin is None:
        return found
    return span_in_original(found, origin, len(text))


def _find_normalised(text: str) -> CredentialMatch | None:
    lowered = text.lower()
    for tier in (vendor_tokens, structured_secrets, contextual_secrets):
        found = tier(text, lowered)
        if found:
            return min(found, key=lambda match: match.start)
    return None


# --- Screening a whole request -----------------------------------------------------------


@dataclass(frozen=True)
class Screened:
    """A request after the credential check of every field the reader controls.

    `credential` is a hit in `question` or `quote` (`field` says which): it settles the turn.
    `request` is the request with `page` and every history item that carried a credential
    removed; `dropped` names them ("page", "history[2]"), never their text."""

    request: AskRequest
    credential: CredentialMatch | None = None
    field: str | None = None
    dropped: tuple[str, ...] = ()


def carries_credential(values: Iterable[object]) -> bool:
    """True when any text among `values` (the fields of one history item) holds a credential."""
    return any(isinstance(v, str) and find_credential(v) is not None for v in values)


def screen_request(request: AskRequest) -> Screened:
    """Check `question`, `quote`, `page` and every field of every history item; pure.

    A secret in the question or the quote ends the turn; one in the page path or in an
    earlier turn (the reader may have pasted it there, or into a turn the browser kept)
    only loses that field or turn, so the conversation goes on without it."""
    credential: CredentialMatch | None = None
    field: str | None = None
    for name in ("question", "quote"):
        value = getattr(request, name)
        if value and (found := find_credential(value)) is not None:
            credential, field = found, name
            break
    dropped: list[str] = []
    page = request.page
    if page and find_credential(page) is not None:
        page = None
        dropped.append("page")
    history = []
    for i, item in enumerate(request.history):
        if carries_credential(getattr(item, f.name) for f in fields(item)):
            dropped.append(f"history[{i}]")
        else:
            history.append(item)
    if dropped:
        request = replace(request, page=page, history=tuple(history))
    return Screened(request, credential, field, tuple(dropped))


_PASSWORD_KINDS = frozenset({"password_assignment", "connection_string_password"})


def credential_reply(match: CredentialMatch, framing: Framing = ENGLISH) -> str:
    """Tell the reader, in short Markdown in the page's language, what was recognised and
    to rotate it; no secret text."""
    rotate = framing.rotate_password if match.kind in _PASSWORD_KINDS else framing.rotate_key
    return framing.credential.format(label=match.label) + "\n\n" + rotate
