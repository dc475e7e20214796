"""What a real secret value looks like: not a placeholder, a reference, a pattern or a word."""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter
from itertools import pairwise

from docpilot_runtime.screen.credential_rules import (
    LEET,
    PLACEHOLDER_WORDS,
    PUBLIC_VALUE_PREFIXES,
    REFERENCE_MARKERS,
    VENDOR_EXAMPLES,
    WEAK_PASSWORDS,
)

NAME_WORD = re.compile(r"[A-Z]?[a-z\u00df-\u024f]+|[A-Z\u00c0-\u00de]+(?![a-z])|\d+|[^\x00-\x7f]+")


# Machine-made secrets use these characters (Django's keys add !@#$%^&*()); prose, paths
# and URLs need others (spaces, ":", "\\", "?").
_TOKEN_CHARS = re.compile(r"[A-Za-z0-9+/=_\-.~!@#$%^&*()]++")
HEX = re.compile(r"[0-9a-f]++|[0-9A-F]++")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_VERSION_OR_DATE = re.compile(r"v?\d++(?:[.\-:T/]\d++)++(?:Z|[\-+][A-Za-z0-9.]{1,20}+)?")
_CODE_LIKE = re.compile(r"[A-Za-z_]\w*+(?:\.[A-Za-z_]\w*+)++|[A-Za-z_][a-z_]*+\d{0,4}+")
_PATH = re.compile(r"(?:/|~/|\.\.?/|[A-Za-z]:\\)(?:[\w.\-]++[/\\]?)*+")
_SEQUENCE = "0123456789abcdefghijklmnopqrstuvwxyz"
_RUN = re.compile(r"(.)\1{5}")


def is_placeholder_text(value: str) -> bool:
    """True for text built to be looked at: placeholder words, runs, sequences, repeats."""
    return has_placeholder_words(value) or is_patterned(value.lower())


def is_patterned(lowered: str) -> bool:
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


def has_placeholder_words(value: str) -> bool:
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


def is_stand_in(value: str) -> bool:
    """True for placeholders, references to secrets kept elsewhere and documented examples."""
    if value in VENDOR_EXAMPLES or is_placeholder_text(value):
        return True
    lowered = value.lower()
    if any(marker in lowered for marker in REFERENCE_MARKERS):
        return True
    return value.startswith(("$", "%", "&", "*", "!", "#", "~/", "./"))


def entropy(value: str) -> float:
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def entropy_floor(n: int) -> float:
    """Shannon entropy (bits/char) that random strings of length n stay above.

    Random hex of 16 characters averages 3.4 bits and falls below 0.6 * log2(16) = 2.4 about
    once in a thousand; base62 of 32 averages 4.6 and never falls below the 3.0 cap. Made-up
    values ("aaaabbbbccccdddd" = 2.0, "abababab…" = 1.0) fall well below.
    """
    return min(3.0, 0.6 * math.log2(max(n, 2)))


def random_enough(body: str) -> bool:
    core = "".join(ch for ch in body if ch.isalnum())
    if len(core) < 8 or words_only(body):
        return False
    return entropy(core) >= entropy_floor(len(core))


def words_only(value: str) -> bool:
    """A slug or identifier made of words ("my-service-token", "userService2Handler")."""
    joined = any(ch in "_-./" for ch in value)
    camel = any(ch.islower() for ch in value) and any(ch.isupper() for ch in value)
    if not (joined or camel):
        return False  # one case, no separators: "k3xq9…", "QX7KD2…" are not words
    pieces = NAME_WORD.findall(value)
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


def mixes_like_random(core: str) -> bool:
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


def looks_random(value: str, *, strong: bool = False, allow_hex: bool = True) -> bool:
    """True for a machine-made token: long, mixed, high-entropy, not words, not an example."""
    if not 16 <= len(value) <= 4096 or _TOKEN_CHARS.fullmatch(value) is None:
        return False
    if value.startswith(PUBLIC_VALUE_PREFIXES) or is_stand_in(value):
        return False
    if value.startswith("eyJ") and "." in value:
        return False  # a JWT or part of one: tier 2 has judged it
    decoded = decode_base64_text(value)
    if decoded is not None and (" " in decoded or words_only(decoded)):
        return False  # base64 of a sentence or a name, not of random bytes
    if _UUID.fullmatch(value):
        return not strong
    if _VERSION_OR_DATE.fullmatch(value):
        return False
    core = "".join(ch for ch in value if ch.isalnum())
    if HEX.fullmatch(core):
        has_both = any(c.isdigit() for c in core) and any(c.isalpha() for c in core)
        return allow_hex and not strong and len(core) >= 20 and has_both and (
            entropy(core) >= entropy_floor(len(core))
        )
    classes = sum((any(c.islower() for c in core), any(c.isupper() for c in core),
                   any(c.isdigit() for c in core)))
    if classes < (3 if strong else 2) or len(core) < 12:
        return False
    if not mixes_like_random(core) or words_only(value):
        return False
    return entropy(core) >= entropy_floor(len(core))


def is_weak_password(value: str) -> bool:
    lowered = value.lower()
    stem = lowered.rstrip("0123456789!?.#*@$%&_-+ ").lstrip("0123456789!?.#*@$%&_-+ ")
    for candidate in (lowered, stem, stem.translate(LEET), lowered.translate(LEET)):
        if not candidate or candidate in WEAK_PASSWORDS:
            return True
        if any(word in candidate for word in ("password", "passwd", "secret", "changeme")):
            return True  # "MySecretPass1!", "S3cr3tP@ss", "db_password_2": not a password
    return False


def looks_like_password(value: str, *, min_classes: int = 3, min_len: int = 8) -> bool:
    """True for a human-chosen password that is plausibly real (not a default, not code)."""
    if not min_len <= len(value) <= 128 or any(ch.isspace() for ch in value):
        return False
    if is_stand_in(value) or is_weak_password(value) or _VERSION_OR_DATE.fullmatch(value):
        return False
    if "://" in value or "(" in value or (_CODE_LIKE.fullmatch(value) and min_classes > 2):
        return False
    if _PATH.fullmatch(value):
        return False  # `PWD=/Users/docs`: the working directory, not a password
    # "_", "-" and "." join words in identifiers and slugs, so they do not count as symbols.
    symbol = any(not c.isalnum() and c not in "_-." for c in value)
    if words_only(value) and not symbol:
        return False
    classes = sum((any(c.islower() for c in value), any(c.isupper() for c in value),
                   any(c.isdigit() for c in value), symbol))
    return classes >= min_classes


def decode_base64_text(value: str) -> str | None:
    if len(value) % 4 or not re.fullmatch(r"[A-Za-z0-9+/]+={0,2}", value):
        return None
    try:
        decoded = base64.b64decode(value, validate=True).decode("utf-8")
    except (ValueError, binascii.Error):
        return None
    return decoded if decoded.isprintable() else None


def decoded_if_base64_text(value: str) -> str:
    """Kubernetes Secrets hold base64 of the password: judge what it decodes to."""
    decoded = decode_base64_text(value) if len(value) >= 8 else None
    return decoded if decoded is not None and len(decoded) >= 4 else value
