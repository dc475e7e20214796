"""Tiers 1 and 2 of the credential check: vendor formats, then structure (PEM, DER, JWT)."""

from __future__ import annotations

import base64
import binascii
import json
import re

from docpilot_runtime.screen.credential_match import CredentialMatch
from docpilot_runtime.screen.credential_rules import (
    JWT_SAMPLE_SECRETS,
    PEM_LABELS,
    TOKEN_CHARS,
    TOKEN_FORMATS,
    VENDOR_EXAMPLES,
    TokenFormat,
)
from docpilot_runtime.screen.values import (
    has_placeholder_words,
    is_patterned,
    is_placeholder_text,
    random_enough,
)

_TOKEN_RUN = re.compile(r"[A-Za-z0-9_\-.+/~$%]{12,}+")
# Rows tried where a token run starts with one of their hints, by hint; the rest scan it all.
_ROWS_BY_PREFIX: dict[str, list[int]] = {}
for _index, _fmt in enumerate(TOKEN_FORMATS):
    for _hint in _fmt.hints if _fmt.at_start else ():
        _ROWS_BY_PREFIX.setdefault(_hint, []).append(_index)
_PREFIX_LENGTHS = sorted({len(hint) for hint in _ROWS_BY_PREFIX})
_HINT_HEADS = frozenset(hint[:2] for hint in _ROWS_BY_PREFIX)  # where a prefix may begin
_LONGEST_PREFIX = _PREFIX_LENGTHS[-1]
_SCANNED_ROWS = [fmt for fmt in TOKEN_FORMATS if not fmt.at_start]
_SCANNED_HINTS = re.compile("|".join(sorted(
    {re.escape(hint) for fmt in _SCANNED_ROWS for hint in fmt.hints}, key=len, reverse=True
)))


# Inside a run of token characters a token can also start after one of these: the end of
# a URL path segment ("/docs/ghp_…"), a dot, a tilde, a dollar sign or a plus.
_INNER_STARTS = re.compile(r"(?<=[/.~$+])[A-Za-z]")
# A line break, with the next line's indentation: a token wrapped across lines.
_LINE_GAP = re.compile(r"\r?\n[ \t]*+")
_MAX_WRAPPED_LINES = 8


def vendor_tokens(text: str, lowered: str) -> list[CredentialMatch]:
    found: list[CredentialMatch] = []
    same_length = len(lowered) == len(text)
    for run in _TOKEN_RUN.finditer(text):
        starts = [run.start()]
        if any(ch in run.group() for ch in "/.~$+"):
            starts += [m.start() for m in _INNER_STARTS.finditer(text, run.start(), run.end())
                       if text[m.start() : m.start() + 2].lower() in _HINT_HEADS]
        for start in starts:
            head = (lowered[start : start + _LONGEST_PREFIX] if same_length
                    else text[start : start + _LONGEST_PREFIX].lower())
            rows = sorted({i for n in _PREFIX_LENGTHS for i in _ROWS_BY_PREFIX.get(head[:n], ())})
            match = _prefixed_token(text, start, rows, run.end())
            if match is not None:
                found.append(match)
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


def _prefixed_token(
    text: str, start: int, rows: list[int], run_end: int
) -> CredentialMatch | None:
    """The first of ``rows`` that matches at ``start``, or across the line breaks of a
    token wrapped over several lines (each line holding nothing else)."""
    for index in rows:
        fmt = TOKEN_FORMATS[index]
        m = fmt.pattern.match(text, start)
        if m is not None and _is_real_token(text, fmt, m):
            return _token_match(fmt, m)
    if not rows:
        return None
    joined, ends = text[start:run_end], [run_end]
    for _ in range(_MAX_WRAPPED_LINES):
        gap = _LINE_GAP.match(text, ends[-1])
        piece = _TOKEN_RUN_PIECE.match(text, gap.end()) if gap else None
        if gap is None or piece is None:
            return None
        joined += piece.group()
        ends.append(piece.end())
        for index in rows:
            fmt = TOKEN_FORMATS[index]
            m = fmt.pattern.match(joined)
            if m is not None and m.end() == len(joined) and _is_real_token(joined, fmt, m):
                return CredentialMatch(fmt.kind, fmt.label, start, ends[-1])
    return None


_TOKEN_RUN_PIECE = re.compile(r"[A-Za-z0-9_\-.+/~$%]{4,}+(?=[ \t]*+(?:\r?\n|$))")


def _is_real_token(text: str, fmt: TokenFormat, m: re.Match[str]) -> bool:
    if not fmt.span_is_body and m.start() and text[m.start() - 1] in TOKEN_CHARS:
        return False  # the middle of a longer token
    body = m.group("body")
    if m.group() in VENDOR_EXAMPLES or body in VENDOR_EXAMPLES:
        return False
    return not is_placeholder_text(body) and random_enough(body)


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


def structured_secrets(text: str, lowered: str) -> list[CredentialMatch]:
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
        if not has_placeholder_words(m.group()):
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
        if len(body) >= 64 and random_enough(body) and not is_patterned(body.lower()):
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
        if len(body) >= _MIN_PRIVATE_KEY_CHARS and not has_placeholder_words(body):
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
    if _signed_with_a_sample_secret(m, str(header.get("alg", ""))):
        return False  # anyone can mint one with the published secret
    payload = _b64url_json(m.group(2))
    # Supabase's anon key is public by design.
    return not (isinstance(payload, dict) and payload.get("role") == "anon")


def _signed_with_a_sample_secret(m: re.Match[str], alg: str) -> bool:
    """Whether an HMAC-signed JWT's signature is that of a documentation sample's secret.
    hashlib and hmac are imported here, for the few texts that reach this, not at every
    boot of the browser core (the reduced standard library zip holds both)."""
    import hashlib
    import hmac

    digest = {"HS256": hashlib.sha256, "HS384": hashlib.sha384, "HS512": hashlib.sha512}.get(
        alg.upper()
    )
    if digest is None:
        return False
    signing = f"{m.group(1)}.{m.group(2)}".encode("ascii")
    return any(
        hmac.compare_digest(
            base64.urlsafe_b64encode(hmac.new(key.encode(), signing, digest).digest())
            .rstrip(b"=").decode("ascii"),
            m.group(3),
        )
        for key in JWT_SAMPLE_SECRETS
    )
