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

The rules are data (`credential_rules.json`, typed by `credential_patterns`): vendor formats,
placeholder and name vocabularies, in every language; this module is the engine that applies
them. `screen_request` runs it over every field of a request a reader controls.

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

import base64
import binascii
import json
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, fields, replace
from itertools import pairwise
from urllib.parse import unquote

from docpilot_runtime.screen.credential_rules import (
    CLI_COMMANDS,
    HASH_WORDS,
    ID_PREFIXES,
    JWT_STAND_INS,
    KEY_QUALIFIERS,
    KEY_STEMS,
    KEY_WORDS,
    LEET,
    NAME_KEYWORDS,
    NAME_STOP_WORDS,
    PASSWORD_STEMS,
    PASSWORD_SUFFIXES,
    PASSWORD_WORDS,
    PEM_LABELS,
    PLACEHOLDER_WORDS,
    PREVIOUS_STOP_WORDS,
    PROSE_FILLERS,
    PUBLIC_VALUE_PREFIXES,
    REFERENCE_MARKERS,
    SECRET_PREFIXES,
    SECRET_STEMS,
    SECRET_SUFFIXES,
    SECRET_WORDS,
    TOKEN_CHARS,
    TOKEN_FORMATS,
    UNREPLAYABLE_SCHEMES,
    VENDOR_EXAMPLES,
    VERB_LIKE_PASSWORD_WORDS,
    WEAK_PASSWORDS,
    TokenFormat,
)
from docpilot_runtime.shared.framing import ENGLISH, Framing
from docpilot_runtime.shared.types import AskRequest

__all__ = [
    "CredentialMatch",
    "Screened",
    "carries_credential",
    "credential_reply",
    "find_credential",
    "normalise_for_matching",
    "screen_request",
]


@dataclass(frozen=True)
class CredentialMatch:
    """A credential found in a question: what it is, and where (for the browser to highlight)."""

    kind: str  # stable machine label, e.g. "openai_api_key"
    label: str  # human name, e.g. "OpenAI API key"
    start: int
    end: int


def find_credential(text: str) -> CredentialMatch | None:
    """Return the credential `text` carries, the most specific kind first; None when clean.

    The rules read the text after `normalise_for_matching`; the span refers to `text`."""
    if len(text) < 8:
        return None
    normal, origin = normalise_for_matching(text)
    found = _find_normalised(normal)
    if found is None or origin is None:
        return found
    return _span_in_original(found, origin, len(text))


def _find_normalised(text: str) -> CredentialMatch | None:
    lowered = text.lower()
    for tier in (_vendor_tokens, _structured_secrets, _contextual_secrets):
        found = tier(text, lowered)
        if found:
            return min(found, key=lambda match: match.start)
    return None


# --- Normalisation: what a reader sees, not how it is encoded ----------------------------

# Characters that render as nothing or as a plain space but would split a name from its
# value for the rules: format characters (zero-width space and joiners, word joiner, BOM,
# soft hyphen, bidi controls, tags), variation selectors, the combining grapheme joiner and
# the Hangul fillers; Unicode spaces (no-break, thin, ideographic …) and line separators.
_INVISIBLE = (
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb\U0001d173-\U0001d17a"
    "\U000e0000-\U000e007f\U000e0100-\U000e01ef"
)
_SPACES = "\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000"
_LINES = "\u0085\u2028\u2029"
_NEEDS_CARE = re.compile(f"[{_INVISIBLE}{_SPACES}{_LINES}]")
_INVISIBLE_CHAR = re.compile(f"[{_INVISIBLE}]")
_SPACE_CHAR = re.compile(f"[{_SPACES}]")
_ASCII_RUN = re.compile(r"[\x00-\x7f]+")


def normalise_for_matching(text: str) -> tuple[str, list[int] | None]:
    """The text the rules read: NFKC (full-width forms, compatibility spaces), Unicode
    spaces as " ", line separators as "\\n", invisible characters removed.

    Returns it with, for each of its characters, where in `text` the character it came from
    starts (None when nothing changed, the usual case), so a finding is shown where the
    reader typed it. A no-break space around `=` or a zero-width space inside a key must not
    hide it."""
    if text.isascii() or (
        _NEEDS_CARE.search(text) is None and unicodedata.is_normalized("NFKC", text)
    ):
        return text, None
    out: list[str] = []
    origin: list[int] = []
    i, n = 0, len(text)
    while i < n:
        run = _ASCII_RUN.match(text, i)
        if run is not None:  # copied as it is, but for a last letter a combining mark follows
            j = run.end() - (run.end() < n and unicodedata.combining(text[run.end()]) > 0)
            if j > i:
                out.append(text[i:j])
                origin.extend(range(i, j))
                i = j
                continue
        j = i + 1
        while j < n and unicodedata.combining(text[j]):
            j += 1  # a base character and its combining marks normalise together
        piece = _normal_piece(text[i:j])
        out.append(piece)
        origin.extend([i] * len(piece))
        i = j
    return "".join(out), origin


_PIECES: dict[str, str] = {}  # one character's normal form, computed once


def _normal_piece(cluster: str) -> str:
    if len(cluster) == 1 and (known := _PIECES.get(cluster)) is not None:
        return known
    head, rest = cluster[0], unicodedata.normalize("NFKC", cluster[1:])
    if _INVISIBLE_CHAR.fullmatch(head):
        piece = rest
    elif _SPACE_CHAR.fullmatch(head):
        piece = " " + rest
    elif head in _LINES:
        piece = "\n"
    else:
        piece = _INVISIBLE_CHAR.sub("", unicodedata.normalize("NFKC", cluster))
    if len(cluster) == 1 and len(_PIECES) < 4096:
        _PIECES[cluster] = piece
    return piece


def _span_in_original(
    found: CredentialMatch, origin: list[int], length: int
) -> CredentialMatch:
    """Map a finding on the normalised text back onto the reader's text."""
    start = origin[found.start] if found.start < len(origin) else length
    k = found.end
    while 0 < k < len(origin) and origin[k] == origin[found.end - 1]:
        k += 1  # the rest of the output the last character's cluster made
    end = origin[k] if 0 < k < len(origin) else length
    return CredentialMatch(found.kind, found.label, start, max(start, end))


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


# --- Tier 1: vendor formats -------------------------------------------------------------


_TOKEN_RUN = re.compile(r"[A-Za-z0-9_\-.+/~$%]{12,}+")
# Rows tried where a token run starts with one of their hints, by hint; the rest scan it all.
_ROWS_BY_PREFIX: dict[str, list[int]] = {}
for _index, _fmt in enumerate(TOKEN_FORMATS):
    for _hint in _fmt.hints if _fmt.at_start else ():
        _ROWS_BY_PREFIX.setdefault(_hint, []).append(_index)
_PREFIX_LENGTHS = sorted({len(hint) for hint in _ROWS_BY_PREFIX})
_LONGEST_PREFIX = _PREFIX_LENGTHS[-1]
_SCANNED_ROWS = [fmt for fmt in TOKEN_FORMATS if not fmt.at_start]
_SCANNED_HINTS = re.compile("|".join(sorted(
    {re.escape(hint) for fmt in _SCANNED_ROWS for hint in fmt.hints}, key=len, reverse=True
)))


def _vendor_tokens(text: str, lowered: str) -> list[CredentialMatch]:
    found: list[CredentialMatch] = []
    same_length = len(lowered) == len(text)
    for run in _TOKEN_RUN.finditer(text):
        start = run.start()
        head = (lowered[start : start + _LONGEST_PREFIX] if same_length
                else run.group()[:_LONGEST_PREFIX].lower())
        rows = sorted({i for n in _PREFIX_LENGTHS for i in _ROWS_BY_PREFIX.get(head[:n], ())})
        for index in rows:
            fmt = TOKEN_FORMATS[index]
            m = fmt.pattern.match(text, start)
            if m is not None and _is_real_token(text, fmt, m):
                found.append(_token_match(fmt, m))
                break
    present = set(_SCANNED_HINTS.findall(lowered))
    for fmt in _SCANNED_ROWS if present else ():
        if not present.intersection(fmt.hints):
            continue
        if fmt.context is not None and fmt.context.search(text) is None:
            continue
        for m in fmt.pattern.finditer(text):
            if _is_real_token(text, fmt, m):
                found.append(_token_match(fmt, m))
                break
    return found


def _is_real_token(text: str, fmt: TokenFormat, m: re.Match[str]) -> bool:
    if not fmt.span_is_body and m.start() and text[m.start() - 1] in TOKEN_CHARS:
        return False  # the middle of a longer token
    body = m.group("body")
    if m.group() in VENDOR_EXAMPLES or body in VENDOR_EXAMPLES:
        return False
    return not _is_placeholder_text(body) and _random_enough(body)


def _token_match(fmt: TokenFormat, m: re.Match[str]) -> CredentialMatch:
    start, end = m.span("body") if fmt.span_is_body else m.span()
    return CredentialMatch(fmt.kind, fmt.label, start, end)


# --- Tier 2: structure --------------------------------------------------------------------

_PEM_PRIVATE = re.compile(r"-----BEGIN ((?:[A-Z0-9]++ ){0,3})PRIVATE KEY(?: BLOCK)?-----")
_B64_RUN = re.compile(r"[A-Za-z0-9+/=]{1,4096}+")
# DER private keys start with fixed bytes, so their base64 starts with fixed text: PKCS#1 RSA,
# PKCS#8 RSA, encrypted PKCS#8, SEC1 EC (P-256, P-384), PKCS#8 EC, PKCS#8 Ed25519, and
# OpenSSH's key format. Public keys (MIIBIjANBg…AAOC, MFkw…, MCow…) start differently.
_DER_PRIVATE = re.compile(
    r"(?:MII[A-Za-z0-9+/]{3}IBAAK|MII[A-Za-z0-9+/]{3}IBADANBgkqhkiG9w0BAQEFAAS"
    r"|MII[A-Za-z0-9+/]{3}B[A-Za-z0-9+/]BgkqhkiG9w0BBQ0w"  # encrypted PKCS#8 (PBES2)
    r"|MHcCAQEEI|MIGkAgEBBD|MIG[A-Za-z0-9+/]AgEAMBMGByqGSM49AgEG|MC4CAQAwBQYDK2Vw"
    r"|b3BlbnNzaC1rZXktdjEAAAAA)[A-Za-z0-9+/]{24,}+"
)
_JWT = re.compile(
    r"(?<![A-Za-z0-9_\-.])(eyJ[A-Za-z0-9_\-]{8,}+)\.([A-Za-z0-9_\-]{8,}+)\.([A-Za-z0-9_\-]*+)"
)
_MIN_PRIVATE_KEY_CHARS = 40  # beyond the fixed DER prefix, so a header plus "MIIE…" is not it


def _structured_secrets(text: str, lowered: str) -> list[CredentialMatch]:
    found: list[CredentialMatch] = []
    if "private key" in lowered:
        found.extend(_pem_private_keys(text))
    if "putty-user-key-file" in lowered and "private-lines" in lowered:
        start = lowered.index("putty-user-key-file")
        found.append(CredentialMatch("pem_private_key", "PuTTY private key", start, len(text)))
    if "openvpn static key" in lowered:
        found.extend(_openvpn_static_keys(text))
    for m in _DER_PRIVATE.finditer(text):
        if m.start() and (text[m.start() - 1].isalnum() or text[m.start() - 1] in "+/"):
            continue
        if not _has_placeholder_words(m.group()):
            found.append(CredentialMatch("pem_private_key", "private key", *m.span()))
            break
    if "eyj" in lowered:
        for m in _JWT.finditer(text):
            if _is_real_jwt(m):
                found.append(CredentialMatch("jwt", "JSON Web Token (JWT)", *m.span()))
                break
    return found


_OPENVPN_KEY = re.compile(
    r"-----BEGIN OpenVPN Static key V1-----[ \t]*+(?:\\n|\r?\n)"
    r"((?:[0-9a-fA-F]{16,64}+(?:\\n|\r?\n)){2,16}+)"
)


def _openvpn_static_keys(text: str) -> list[CredentialMatch]:
    """OpenVPN's `tls-auth`/`tls-crypt` key: 2,048 random bits as hex lines in a block."""
    for m in _OPENVPN_KEY.finditer(text):
        body = "".join(ch for ch in m.group(1) if ch in "0123456789abcdefABCDEF")
        if len(body) >= 64 and _random_enough(body) and not _is_patterned(body.lower()):
            return [CredentialMatch("openvpn_static_key", "OpenVPN static key", *m.span())]
    return []


def _pem_private_keys(text: str) -> list[CredentialMatch]:
    for m in _PEM_PRIVATE.finditer(text):
        after = text[m.end() : m.end() + 600].replace("\\n", "\n").replace("\\r", "")
        lines = [line.strip(" \t\r\"',") for line in after.split("\n")]
        body = ""
        for line in lines:
            if line.startswith("-----"):
                break
            if ": " in line or not line:  # Proc-Type:, DEK-Info:, Version: headers
                continue
            run = _B64_RUN.match(line)
            if run is None:
                break
            body += run.group()
            if run.end() < len(line):
                break
        if len(body) >= _MIN_PRIVATE_KEY_CHARS and not _has_placeholder_words(body):
            kind_word = (m.group(1) or "").split()
            label = PEM_LABELS.get(kind_word[0] if kind_word else "", "private key")
            end = text.find("PRIVATE KEY", m.end())
            end = len(text) if end == -1 else min(len(text), end + 16)
            return [CredentialMatch("pem_private_key", label, m.start(), end)]
    return []


def _b64url_json(segment: str) -> object:
    padded = segment + "=" * (-len(segment) % 4)
    try:
        return json.loads(base64.urlsafe_b64decode(padded))
    except (ValueError, binascii.Error):
        return None


def _is_real_jwt(m: re.Match[str]) -> bool:
    if m.group() in VENDOR_EXAMPLES:
        return False
    header = _b64url_json(m.group(1))
    if not isinstance(header, dict) or not ({"alg", "typ", "enc"} & header.keys()):
        return False
    if len(m.group(3)) < 16 or str(header.get("alg", "")).lower() == "none":
        return False  # unsigned: anyone can mint one, so it grants nothing
    payload = _b64url_json(m.group(2))
    if isinstance(payload, dict):
        claims = json.dumps(payload).lower()
        if any(word in claims for word in JWT_STAND_INS):
            return False
        if payload.get("role") == "anon":
            return False  # Supabase's anon key is public by design
    return True


# --- Tier 3: context ----------------------------------------------------------------------


def _contextual_secrets(text: str, lowered: str) -> list[CredentialMatch]:
    found: list[CredentialMatch] = []
    if "://" in text:
        found.extend(_url_passwords(text))
    if _LONG_ALNUM_RUN.search(text):  # ties go to the first listed: the vendor-style token
        found.extend(_prefixed_random_tokens(text))
    if _UUID_BODY.search(text):
        found.extend(_prefixed_uuids(text))
    found.extend(_named_secrets(text, lowered))
    if any(command in lowered for command in CLI_COMMANDS):
        found.extend(_command_line_passwords(text))
    return found


_CLI_PASSWORD = re.compile(
    r"\b(?:mysql\w*+|mariadb\w*+)\b[^\n]{0,200}?[ \t]-p(?P<mysql>[^\s'\"`\-][^\s'\"`]{3,127})"
    r"|\bsshpass[ \t]++-p[ \t]*+['\"]?(?P<sshpass>[^\s'\"`]{4,128})"
    r"|\b(?:curl|wget)\b[^\n]{0,300}?[ \t](?:-u|--user)[ \t=]*+['\"]?[^\s:'\"`]{1,64}:"
    r"(?P<user>[^\s'\"`]{4,128})"
    r"|\bdocker[ \t]++login\b[^\n]{0,200}?[ \t]-p[ \t]++['\"]?(?P<docker>[^\s'\"`]{4,128})"
)


def _command_line_passwords(text: str) -> list[CredentialMatch]:
    for m in _CLI_PASSWORD.finditer(text):
        group = m.lastgroup or ""
        password = m.group(group)
        if _is_stand_in(password) or _is_weak_password(password):
            continue
        if _looks_like_password(password, min_classes=2, min_len=6) or _looks_random(password):
            start, end = m.span(group)
            return [CredentialMatch("password_assignment", "password on a command line",
                                    start, end)]
    return []


_PORT = re.compile(r"\d{1,5}(?![A-Za-z0-9])")
_URL_USERINFO = re.compile(
    r"(?<![A-Za-z0-9+.\-])([A-Za-z][A-Za-z0-9+.\-]{1,30}+)://"
    r"([^\s:/?#@\"'<>\[\]]{0,128}+):((?:[^\s/@\"'<>]|@(?=[^\s/@\"'<>]*+@)){1,256}+)"
    r"@(?=[A-Za-z0-9\[_])([^\s/?#:]*+)"
)


def _url_passwords(text: str) -> list[CredentialMatch]:
    for m in _URL_USERINFO.finditer(text):
        scheme, user, password, host = m.group(1).lower(), m.group(2), m.group(3), m.group(4)
        plain = unquote(password)
        if plain == unquote(user) or _is_stand_in(plain) or _is_weak_password(plain):
            continue
        if "." in user and _PORT.match(plain):
            continue  # `https://host.example:8443,other@…`: a host and port, not user:password
        if not (_looks_random(plain) or _looks_like_password(plain, min_classes=2, min_len=6)):
            continue
        if "sentry" in host.lower():
            kind, label = "sentry_dsn", "Sentry DSN with its secret key"
        elif scheme in ("http", "https"):
            kind, label = "connection_string_password", "password in a URL"
        else:
            kind, label = "connection_string_password", "password in a connection string"
        return [CredentialMatch(kind, label, m.start(3), m.end(3))]
    return []


_NAME_KEYWORD_TEXT = "|".join(NAME_KEYWORDS)
_NAME_KEYWORD = re.compile(_NAME_KEYWORD_TEXT)
_NAME_KEYWORD_ANY_CASE = re.compile(_NAME_KEYWORD_TEXT, re.IGNORECASE)
_NAME_WORD = re.compile(r"[A-Z]?[a-z\u00df-\u024f]+|[A-Z\u00c0-\u00de]+(?![a-z])|\d+|[^\x00-\x7f]+")
_ASSIGNMENT = re.compile(
    r"[\"'`\]]{0,2}+[ \t]*+(?:=>|:=|==|=|:(?![:/])|：|＝)[ \t]*+(?:\r?\n[ \t]*+)?"
    r"|[\"'][ \t]++value[ \t]*+=[ \t]*+"
    r"|[ \t]*+\r?\n[ \t]*+(?:-[ \t]*+)?value[ \t]*+:[ \t]*+"
)
_BARE_VALUE = re.compile(r"[^\s\"'`,;<>(){}\[\]\x80-\U0010ffff]{1,256}+")
_NEXT_QUERY_PARAMETER = re.compile(r"&[A-Za-z_][\w.\-]*+=")
_AUTH_VALUE = re.compile(
    r"[fb]?[\"'`]?[ \t]*+([A-Za-z][A-Za-z0-9\-]{1,24}+)[ \t]++([A-Za-z0-9+/=_\-.~:%$]{1,4096}+)"
)
# A few words between a name and its value, then "is" or ":" ("token for Cloudflare: …").
_PROSE_LEAD = re.compile(
    r"(?:[ \t]++[^\W\d_]{1,20}+){1,6}?"
    r"(?:[ \t]++(?:is|was|are|es|est|ist|lautet|é|è)(?=[ \t])|[ \t]*+[:=：＝])[ \t]*+"
)


def _named_secrets(text: str, lowered: str) -> list[CredentialMatch]:
    # Searching the lower-cased text is ten times faster than IGNORECASE; the rare text whose
    # length changes when lower-cased ("İ") falls back to the slow way.
    if len(lowered) == len(text):
        hits = _NAME_KEYWORD.finditer(lowered)
    else:
        hits = _NAME_KEYWORD_ANY_CASE.finditer(text)
    resume = 0
    for kw in hits:
        if kw.start() < resume:
            continue
        start, end = _expand_name(text, kw.start(), kw.end())
        resume = end
        xml_name = text[start:end] if start and text[start - 1] == "<" else None
        located = _locate_value(text, end, cli=text.startswith("-", start), xml_name=xml_name)
        if located is None:
            continue
        value_start, prose = located
        read = _read_value(text, value_start, prose)
        if read is None:
            continue
        resume = max(resume, read[2])  # a value is not a name: `key=key=…` is scanned once
        header = text[max(start, end - 13) : end].lower() == "authorization"
        if not header and not _could_be_secret(read[0]):
            continue
        if text.startswith(("(", "["), read[2]):
            continue  # `key = base64.b64encode(…)`, `token = data["token"]`: code
        words = [w.lower() for w in _NAME_WORD.findall(text[start:end])]
        previous = _previous_word(text, start)
        if prose and len(words) == 1 and words[0] in VERB_LIKE_PASSWORD_WORDS and previous != "de":
            continue  # "pass `stream=True`": the verb, not a password ("mot de passe" is)
        begin = start - 1 - len(previous)
        proper = bool(previous) and text[begin].isupper() and text[begin + 1 : start].islower()
        family = _name_family(words, previous, proper=proper)
        if family is None:
            continue
        if family == "authorization":
            match = _authorization_header(text, value_start)
        else:
            match = _judge_named_value(text, read, family, words, prose)
        if match is not None:
            return [match]
    return []


# Names are ASCII identifiers, or words in Latin, Cyrillic or Hangul script; CJK and kana
# keywords stand alone, since those scripts put no space between a name and its value.
_NAME_CHARS = "A-Za-z0-9_.\\-\u00c0-\u024f\u0400-\u04ff\uac00-\ud7a3"
_NAME_TAIL = re.compile(f"[{_NAME_CHARS}]{{0,64}}")
_NAME_CHAR = re.compile(f"[{_NAME_CHARS}]")


def _expand_name(text: str, start: int, end: int) -> tuple[int, int]:
    """Widen a keyword hit to the whole name around it (`DB_PASSWORD`, `x-api-key`)."""
    if _NAME_CHAR.match(text, start) is None:
        return start, end
    limit = max(0, start - 64)
    while start > limit and _NAME_CHAR.match(text, start - 1):
        start -= 1
    tail = _NAME_TAIL.match(text, end)
    end = tail.end() if tail is not None else end
    while end > start and text[end - 1] in ".-":
        end -= 1
    while start < end and text[start] == ".":
        start += 1
    return start, end


def _previous_word(text: str, start: int) -> str:
    """The word one space before a name, lower-cased ("API" in "API key")."""
    if start == 0 or text[start - 1] not in " \t":
        return ""
    end = begin = start - 1
    while begin > 0 and end - begin < 24 and text[begin - 1].isalpha():
        begin -= 1
    return text[begin:end].lower()


def _is_password_word(word: str) -> bool:
    return word in PASSWORD_WORDS or word.endswith(PASSWORD_SUFFIXES) or word.startswith(
        PASSWORD_STEMS
    )


def _is_secret_word(word: str) -> bool:
    return word in SECRET_WORDS or word.endswith(SECRET_SUFFIXES) or word.startswith(
        SECRET_STEMS
    )


def _name_family(words: list[str], previous: str, *, proper: bool = False) -> str | None:
    """What a name says its value is: password, secret, ambiguous key, header, or nothing.

    `proper` says the word before the name is capitalised like a product's name ("my
    Algolia key"), which makes a lone "key" a credential, as "API key" does."""
    if not words or any(w in NAME_STOP_WORDS for w in words) or previous in PREVIOUS_STOP_WORDS:
        return None
    if any(w.startswith(("csrf", "xsrf")) for w in words):
        return None  # `csrftoken`: useless without the session it guards
    if words[-1] == "authorization":
        return "authorization"
    if any(_is_password_word(w) for w in words):
        return "password"
    if any(_is_secret_word(w) for w in words):
        return "secret"
    keyish = [w for w in words if w in KEY_WORDS or w.startswith(KEY_STEMS) or (
        w.endswith("key") and w[:-3] in KEY_QUALIFIERS)]
    if keyish:
        # Only English "key" alone is vague (primary key, cache key); "clave", "Schlüssel",
        # "ключ" in a docs question mean a credential, and their qualifier often follows.
        named_product = proper and previous not in NAME_STOP_WORDS
        vague = (keyish[0] == "key" and len(words) == 1 and previous not in KEY_QUALIFIERS
                 and not named_product)
        return "key" if vague else "secret"
    if words[-1] == "bearer":
        return "bearer"
    return None


def _locate_value(
    text: str, pos: int, *, cli: bool, xml_name: str | None
) -> tuple[int, bool] | None:
    """Where the value after a name starts, and whether it sits in prose rather than syntax."""
    m = _ASSIGNMENT.match(text, pos)
    if m is not None:
        return m.end(), False
    if xml_name is not None and text.startswith(">", pos):  # <password>…</password>
        close = text.find(f"</{xml_name}>", pos, pos + 260)
        return (pos + 1, False) if close != -1 else None
    if pos >= len(text):
        return None
    nxt = text[pos]
    if cli and nxt in " \t":
        while pos < len(text) and text[pos] in " \t":
            pos += 1
        return pos, False
    if not (nxt in " \t" or "\u3000" <= nxt <= "\u9fff" or "\uac00" <= nxt <= "\ud7a3"):
        return None
    lead = _PROSE_LEAD.match(text, pos)  # "password for the admin panel is …"
    return (lead.end() if lead is not None else _skip_prose_filler(text, pos)), True


def _skip_prose_filler(text: str, pos: int) -> int:
    for _ in range(4):
        while pos < len(text) and text[pos] in " \t":
            pos += 1
        end = pos
        while end < len(text) and end - pos < 12 and text[end].isalpha() and text[end].isascii():
            end += 1
        if end == pos and pos < len(text):
            end = pos + 1  # one CJK particle or punctuation mark
        word = text[pos:end].lower()
        if word not in PROSE_FILLERS:
            return pos
        pos = end
    return pos


def _read_value(text: str, pos: int, prose: bool) -> tuple[str, int, int] | None:
    if text.startswith(("f\"", "f'", "b\"", "b'"), pos):
        pos += 1
    if pos < len(text) and text[pos] in "\"'`":
        close = text.find(text[pos], pos + 1, pos + 258)
        if close == -1 or "\n" in text[pos + 1 : close]:
            return None
        return text[pos + 1 : close], pos + 1, close
    m = _BARE_VALUE.match(text, pos)
    if m is None:
        return None
    value = m.group()
    if (cut := _NEXT_QUERY_PARAMETER.search(value)) is not None:
        value = value[: cut.start()]  # `?token=…&page=2`: the value ends at the next parameter
    value = value.rstrip(".:!?") if prose else value.rstrip(".")
    return (value, pos, pos + len(value)) if value else None


def _could_be_secret(value: str) -> bool:
    """Cheap first look: long enough, and not a plain word or number ("setting", "8080")."""
    if len(value) < 6 or value.isdigit():
        return False
    return not (value.isalpha() and (value.islower() or value.isupper()))


def _judge_named_value(
    text: str, read: tuple[str, int, int], family: str, words: list[str], prose: bool
) -> CredentialMatch | None:
    value, start, end = read
    for prefix in ("base64:", "oauth:"):  # Laravel's APP_KEY=base64:…, Twitch's oauth:…
        if value.startswith(prefix):
            value, start = value[len(prefix) :], start + len(prefix)
    if _names_itself(value, words):
        return None  # "api_key: my_api_key_here"
    if family == "bearer":
        if _looks_random(value):
            return CredentialMatch("authorization_header", "bearer token", start, end)
        return None
    if family == "password":
        candidate = _decoded_if_base64_text(value) if not prose else value
        if not (_looks_like_password(candidate) or _looks_random(candidate)):
            return None
        before = text[max(0, start - 12) : start].rstrip(" ='\"").lower()
        if text.startswith(";", end) or before.endswith((";password", ";pwd", ";pass")):
            return CredentialMatch(
                "connection_string_password", "password in a connection string", start, end
            )
        return CredentialMatch("password_assignment", "password", start, end)
    if not _looks_random(value, strong=family == "key"):
        return None
    if prose and _HEX.fullmatch(value) and _near_hash_words(text, start):
        return None  # "the sha256 of the token file is …"
    return CredentialMatch("high_entropy_secret", "secret token or API key", start, end)


def _names_itself(value: str, words: list[str]) -> bool:
    """True when the value spells its own name as a word ("my_api_key_here",
    `PKCS12PrivateKeyTypes` under `key:`) and nothing random is left without it. A vendor
    prefix that repeats the name (`sk-helicone-…` under HELICONE_API_KEY, `RGAPI-…` under
    RIOT_API_KEY) leaves a random rest; a name's letters met by chance inside a random body
    are not a word."""
    lowered = value.lower()
    if len(lowered) != len(value):
        return any(len(w) >= 3 and w in lowered for w in words)
    covered = [False] * len(value)
    for word in (w for w in words if len(w) >= 3):
        at = lowered.find(word)
        while at != -1:
            after = at + len(word)
            if _word_bounded(value, at, after):
                if at >= 12 or (after < len(value) and value[after] not in "-_."):
                    return True  # the name inside the value, not a prefix before it
                covered[at:after] = [True] * len(word)
            at = lowered.find(word, at + 1)
    if not any(covered):
        return False
    rest = "".join(ch for ch, hidden in zip(value, covered, strict=True) if not hidden)
    return not _looks_random(rest.strip("_-.:"))


def _word_bounded(value: str, start: int, end: int) -> bool:
    """`value[start:end]` stands as a word: separators, the ends, or case changes around it."""
    head, tail = value[start], value[end - 1]
    before = start == 0 or not value[start - 1].isalnum() or (
        value[start - 1].islower() and head.isupper())
    after = end == len(value) or not value[end].isalnum() or (
        value[end].isupper() and tail.islower())
    return before and after


def _near_hash_words(text: str, pos: int) -> bool:
    window = text[max(0, pos - 80) : pos + 80].lower()
    return any(word in window for word in HASH_WORDS)


def _authorization_header(text: str, pos: int) -> CredentialMatch | None:
    m = _AUTH_VALUE.match(text, pos)
    if m is None:
        read = _read_value(text, pos, prose=False)
        if read is not None and _looks_random(read[0]):
            return CredentialMatch("authorization_header", "Authorization header", *read[1:])
        return None
    scheme, credential = m.group(1).lower(), m.group(2).rstrip("\"'`.")
    start, end = m.start(2), m.start(2) + len(credential)
    if scheme in UNREPLAYABLE_SCHEMES or _is_stand_in(credential):
        return None
    if scheme == "basic":
        decoded = _decode_base64_text(credential)
        if decoded is None or ":" not in decoded:
            return None
        user, _, password = decoded.partition(":")
        if password == user or _is_stand_in(password) or _is_weak_password(password):
            return None
        if _looks_like_password(password, min_classes=2, min_len=6) or _looks_random(password):
            return CredentialMatch("authorization_header", "HTTP Basic credentials", start, end)
        return None
    if _looks_random(credential):
        label = "bearer token" if scheme == "bearer" else "Authorization header"
        return CredentialMatch("authorization_header", label, start, end)
    return None


_LONG_ALNUM_RUN = re.compile(r"[A-Za-z0-9]{24}")
# An unknown vendor's token: a short lower- or mixed-case prefix of up to three segments
# joined by "_" or "-" (`abc_`, `sk-lf-`, `pat-na1-`), then a random body. Bodies may
# carry "_" and "-" (url-safe base64); each is judged on its letters and digits.
_PREFIXED_TOKEN = re.compile(
    r"(?<![A-Za-z0-9_\-./+=@:])([A-Za-z][A-Za-z0-9]{1,11}[_\-](?:[A-Za-z0-9]{1,20}[_\-]){0,2})"
    r"([A-Za-z0-9][A-Za-z0-9_\-]{23,}+)(?![A-Za-z0-9_\-./+=])"
)
_UUID_TEXT = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_UUID_BODY = re.compile(_UUID_TEXT)
# A UUID behind a prefix (`sk_…`, `pat-na1-…`, `access-production-…`): a key only when the
# prefix's first segment says so (SECRET_PREFIXES); `req_…`, `user-…` are identifiers.
_PREFIXED_UUID = re.compile(
    r"(?<![A-Za-z0-9_\-./+=@:])([A-Za-z][A-Za-z0-9]{1,11})[_\-](?:[A-Za-z0-9]{1,12}[_\-]){0,2}?"
    + _UUID_TEXT + r"(?![A-Za-z0-9_\-./+=])"
)


def _prefixed_uuids(text: str) -> list[CredentialMatch]:
    for m in _PREFIXED_UUID.finditer(text):
        if m.group(1).lower() in SECRET_PREFIXES and not _is_stand_in(m.group()):
            return [CredentialMatch("generic_api_token", "API token", *m.span())]
    return []


def _prefixed_random_tokens(text: str) -> list[CredentialMatch]:
    for m in _PREFIXED_TOKEN.finditer(text):
        prefix, body = m.group(1), m.group(2)
        first = re.split(r"[_\-]", prefix.lower(), maxsplit=1)[0]
        if first in ID_PREFIXES or m.group().startswith(PUBLIC_VALUE_PREFIXES):
            continue
        if _is_stand_in(body) or _words_only(m.group()):
            continue
        if _looks_like_vendor_body(text, m.start(), first, body):
            return [CredentialMatch("generic_api_token", "API token", *m.span())]
    return []


def _looks_like_vendor_body(text: str, start: int, first: str, body: str) -> bool:
    """A body behind an unknown prefix that is random: base62, lower-case base36, or a hex
    string (not next to digest words)."""
    core = "".join(ch for ch in body if ch.isalnum())
    if len(core) < 24:
        return False
    if _HEX.fullmatch(core):
        return len(core) >= 32 and not _near_hash_words(text, start) and (
            _entropy(core) >= _entropy_floor(len(core)))
    if _looks_random(core, strong=True, allow_hex=False):
        return True
    # Lower-case base36 (`csk-…`, `glimt-…`): two classes, so it must be long and mixed.
    return len(core) >= 32 and (core.islower() or core.isupper()) and (
        any(c.isdigit() for c in core) and _mixes_like_random(core)
        and _entropy(core) >= _entropy_floor(len(core)))


# --- What a real value looks like ---------------------------------------------------------

# Machine-made secrets use these characters (Django's keys add !@#$%^&*()); prose, paths
# and URLs need others (spaces, ":", "\\", "?").
_TOKEN_CHARS = re.compile(r"[A-Za-z0-9+/=_\-.~!@#$%^&*()]++")
_HEX = re.compile(r"[0-9a-f]++|[0-9A-F]++")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_VERSION_OR_DATE = re.compile(r"v?\d++(?:[.\-:T/]\d++)++(?:Z|[\-+][A-Za-z0-9.]{1,20}+)?")
_CODE_LIKE = re.compile(r"[A-Za-z_]\w*+(?:\.[A-Za-z_]\w*+)++|[A-Za-z_][a-z_]*+\d{0,4}+")
_PATH = re.compile(r"(?:/|~/|\.\.?/|[A-Za-z]:\\)(?:[\w.\-]++[/\\]?)*+")
_SEQUENCE = "0123456789abcdefghijklmnopqrstuvwxyz"
_RUN = re.compile(r"(.)\1{5}")


def _is_placeholder_text(value: str) -> bool:
    """True for text built to be looked at: placeholder words, runs, sequences, repeats."""
    return _has_placeholder_words(value) or _is_patterned(value.lower())


def _is_patterned(lowered: str) -> bool:
    """Runs ("aaaaaa"), sequences ("abcdef", "a1b2c3", "987654") and short repeats."""
    if _RUN.search(lowered):
        return True
    core = "".join(ch for ch in lowered[:256] if ch.isalnum())
    if any(_is_sequence(core[i : i + 6]) for i in range(len(core) - 5)):
        return True
    even, odd = core[::2], core[1::2]  # "a1b2c3d4e5f6": two interleaved sequences
    if any(
        _is_sequence(even[i : i + 5]) and _is_sequence(odd[i : i + 5])
        for i in range(len(odd) - 4)
    ):
        return True
    n = len(core)
    return n >= 12 and any(core[p:] == core[:-p] for p in range(1, min(n // 3, 16) + 1))


def _is_sequence(window: str) -> bool:
    return window in _SEQUENCE or window[::-1] in _SEQUENCE


def _has_placeholder_words(value: str) -> bool:
    """A placeholder word written as people write words: "your", "YOUR" or "Your".

    Matching every mixed case ("yOuR") would find a four-letter word somewhere in one random
    1,600-character private key out of a hundred; written cases, one in ten thousand.
    """
    lowered = value.lower()
    return any(
        word in value or word.upper() in value or word.capitalize() in value
        for word in PLACEHOLDER_WORDS
        if word in lowered
    )


def _is_stand_in(value: str) -> bool:
    """True for placeholders, references to secrets kept elsewhere and documented examples."""
    if value in VENDOR_EXAMPLES or _is_placeholder_text(value):
        return True
    lowered = value.lower()
    if any(marker in lowered for marker in REFERENCE_MARKERS):
        return True
    return value.startswith(("$", "%", "&", "*", "!", "#", "~/", "./"))


def _entropy(value: str) -> float:
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def _entropy_floor(n: int) -> float:
    """Shannon entropy (bits/char) that random strings of length n stay above.

    Random hex of 16 characters averages 3.4 bits and falls below 0.6 * log2(16) = 2.4 about
    once in a thousand; base62 of 32 averages 4.6 and never falls below the 3.0 cap. Made-up
    values ("aaaabbbbccccdddd" = 2.0, "abababab…" = 1.0) fall well below.
    """
    return min(3.0, 0.6 * math.log2(max(n, 2)))


def _random_enough(body: str) -> bool:
    core = "".join(ch for ch in body if ch.isalnum())
    if len(core) < 8 or _words_only(body):
        return False
    return _entropy(core) >= _entropy_floor(len(core))


def _words_only(value: str) -> bool:
    """A slug or identifier made of words ("my-service-token", "userService2Handler")."""
    joined = any(ch in "_-./" for ch in value)
    camel = any(ch.islower() for ch in value) and any(ch.isupper() for ch in value)
    if not (joined or camel):
        return False  # one case, no separators: "k3xq9…", "QX7KD2…" are not words
    pieces = _NAME_WORD.findall(value)
    # Without separators only long camel-case words count ("UpdateFirmwareVersion"): random
    # mixed-case letters split into short pieces.
    if not pieces or sum(map(len, pieces)) / len(pieces) < (3.5 if joined else 4.5):
        return False
    words = [p for p in pieces if len(p) >= 3 and p.isalpha()]
    if sum(map(len, words)) < 0.6 * sum(map(len, pieces)):
        return False
    return all(_is_wordlike(p.lower()) for p in words)


def _is_wordlike(piece: str) -> bool:
    """Pronounceable: some vowels, no long consonant cluster (random letters rarely are)."""
    vowels = sum(ch in "aeiouy" for ch in piece)
    longest = run = 0
    for ch in piece:
        run = 0 if ch in "aeiouy" else run + 1
        longest = max(longest, run)
    return vowels >= 0.15 * len(piece) and longest <= 4


def _mixes_like_random(core: str) -> bool:
    """True when lower/upper/digit characters interleave as in a random string.

    For independent characters the chance that neighbours differ in class is 1 - sum(f_c^2)
    over the class frequencies f_c: 0.62 for base62, 0.47 for hex, 0.30 for base32. Words and
    identifiers keep their classes in long runs ("PRODUCTION_DB_2") or are nearly one class.
    """
    classes = ["l" if ch.islower() else "u" if ch.isupper() else "d" for ch in core]
    n = len(classes)
    expected = 1 - sum((count / n) ** 2 for count in Counter(classes).values())
    if expected < 0.15:
        return False
    changes = sum(a != b for a, b in pairwise(classes))
    return changes / (n - 1) >= 0.5 * expected


def _looks_random(value: str, *, strong: bool = False, allow_hex: bool = True) -> bool:
    """True for a machine-made token: long, mixed, high-entropy, not words, not an example."""
    if not 16 <= len(value) <= 4096 or _TOKEN_CHARS.fullmatch(value) is None:
        return False
    if value.startswith(PUBLIC_VALUE_PREFIXES) or _is_stand_in(value):
        return False
    if value.startswith("eyJ") and "." in value:
        return False  # a JWT or part of one: tier 2 has judged it
    decoded = _decode_base64_text(value)
    if decoded is not None and (" " in decoded or _words_only(decoded)):
        return False  # base64 of a sentence or a name, not of random bytes
    if _UUID.fullmatch(value):
        return not strong
    if _VERSION_OR_DATE.fullmatch(value):
        return False
    core = "".join(ch for ch in value if ch.isalnum())
    if _HEX.fullmatch(core):
        has_both = any(c.isdigit() for c in core) and any(c.isalpha() for c in core)
        return allow_hex and not strong and len(core) >= 20 and has_both and (
            _entropy(core) >= _entropy_floor(len(core))
        )
    classes = sum((any(c.islower() for c in core), any(c.isupper() for c in core),
                   any(c.isdigit() for c in core)))
    if classes < (3 if strong else 2) or len(core) < 12:
        return False
    if not _mixes_like_random(core) or _words_only(value):
        return False
    return _entropy(core) >= _entropy_floor(len(core))


def _is_weak_password(value: str) -> bool:
    lowered = value.lower()
    stem = lowered.rstrip("0123456789!?.#*@$%&_-+ ").lstrip("0123456789!?.#*@$%&_-+ ")
    for candidate in (lowered, stem, stem.translate(LEET), lowered.translate(LEET)):
        if not candidate or candidate in WEAK_PASSWORDS:
            return True
        if any(word in candidate for word in ("password", "passwd", "secret", "changeme")):
            return True  # "MySecretPass1!", "S3cr3tP@ss", "db_password_2": not a password
    return False


def _looks_like_password(value: str, *, min_classes: int = 3, min_len: int = 8) -> bool:
    """True for a human-chosen password that is plausibly real (not a default, not code)."""
    if not min_len <= len(value) <= 128 or any(ch.isspace() for ch in value):
        return False
    if _is_stand_in(value) or _is_weak_password(value) or _VERSION_OR_DATE.fullmatch(value):
        return False
    if "://" in value or "(" in value or (_CODE_LIKE.fullmatch(value) and min_classes > 2):
        return False
    if _PATH.fullmatch(value):
        return False  # `PWD=/Users/docs`: the working directory, not a password
    # "_", "-" and "." join words in identifiers and slugs, so they do not count as symbols.
    symbol = any(not c.isalnum() and c not in "_-." for c in value)
    if _words_only(value) and not symbol:
        return False
    classes = sum((any(c.islower() for c in value), any(c.isupper() for c in value),
                   any(c.isdigit() for c in value), symbol))
    return classes >= min_classes


def _decode_base64_text(value: str) -> str | None:
    if len(value) % 4 or not re.fullmatch(r"[A-Za-z0-9+/]+={0,2}", value):
        return None
    try:
        decoded = base64.b64decode(value, validate=True).decode("utf-8")
    except (ValueError, binascii.Error):
        return None
    return decoded if decoded.isprintable() else None


def _decoded_if_base64_text(value: str) -> str:
    """Kubernetes Secrets hold base64 of the password: judge what it decodes to."""
    decoded = _decode_base64_text(value) if len(value) >= 8 else None
    return decoded if decoded is not None and len(decoded) >= 4 else value
