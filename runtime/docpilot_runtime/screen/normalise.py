"""The credential check reads text as a reader sees it, not as it is encoded."""

from __future__ import annotations

import re
import unicodedata

from docpilot_runtime.screen.credential_match import CredentialMatch

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
# Characters a token is made of: a Unicode space between two of them is not a word break.
_TOKEN_CHAR = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
# A percent-encoded unreserved character (RFC 3986 2.3): URLs never need to encode these,
# and a URL that does means the same as one that does not (6.2.2.2), so they are decoded.
_PERCENT_UNRESERVED = re.compile(r"%(2[dDeE]|3[0-9]|[46][1-9a-fA-F]|[57][0-9aA]|5[fF]|7[eE])")
# Letters of other scripts that look like Latin ones (after Unicode's confusables list, TR39),
# read as Latin only inside a word that also has ASCII letters or digits: "ghр_…" with a
# Cyrillic "р" is a GitHub token, "пароль" stays Russian.
_LOOK_ALIKES = str.maketrans({
    # Cyrillic
    "а": "a", "в": "b", "е": "e", "і": "i", "ј": "j", "к": "k", "м": "m", "о": "o",
    "р": "p", "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s", "һ": "h", "ԁ": "d",
    "ԛ": "q", "ԝ": "w", "ӏ": "l", "ɡ": "g",
    "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P",
    "С": "C", "Т": "T", "У": "Y", "Х": "X", "І": "I", "Ј": "J", "Ѕ": "S", "Ү": "Y",
    "Ԛ": "Q", "Ԝ": "W", "Ӏ": "I",
    # Greek
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M",
    "Ν": "N", "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X", "ο": "o", "ν": "v",
    "ι": "i", "κ": "k", "ρ": "p", "υ": "u", "χ": "x", "α": "a",
})
_LOOK_ALIKE = re.compile("[" + "".join(chr(c) for c in _LOOK_ALIKES) + "]")
_WORD = re.compile(r"[\w-]+")
_ASCII_ALNUM = re.compile(r"[A-Za-z0-9]")


def normalise_for_matching(text: str) -> tuple[str, list[int] | None]:
    """The text the rules read: NFKC (full-width forms, compatibility spaces), Unicode
    spaces as " " (none between two token characters: "ghp_ab\u00a0cd" is one token), line
    separators as "\\n", invisible characters removed, percent-encoded unreserved
    characters decoded ("ghp%5F…"), and look-alike letters of other scripts read as Latin
    inside a word that mixes them with ASCII.

    Returns it with, for each of its characters, where in `text` the character it came from
    starts (None when nothing changed, the usual case), so a finding is shown where the
    reader typed it. A no-break space around `=` or a zero-width space inside a key must not
    hide it."""
    if text.isascii():
        if "%" in text and _PERCENT_UNRESERVED.search(text):
            return _percent_decoded(text, list(range(len(text))))
        return text, None
    if _NEEDS_CARE.search(text) is None and unicodedata.is_normalized("NFKC", text):
        out_text, origin = text, list(range(len(text)))
    else:
        out_text, origin = _normalised(text)
    if "%" in out_text and _PERCENT_UNRESERVED.search(out_text):
        out_text, origin = _percent_decoded(out_text, origin)
    if _LOOK_ALIKE.search(out_text):
        out_text = _latin_look_alikes(out_text)
    if out_text == text:
        return text, None
    return out_text, origin


def _percent_decoded(text: str, origin: list[int]) -> tuple[str, list[int]]:
    out: list[str] = []
    mapped: list[int] = []
    last = 0
    for m in _PERCENT_UNRESERVED.finditer(text):
        out.append(text[last : m.start()])
        mapped.extend(origin[last : m.start()])
        out.append(chr(int(m.group(1), 16)))
        mapped.append(origin[m.start()])
        last = m.end()
    out.append(text[last:])
    mapped.extend(origin[last:])
    return "".join(out), mapped


def _latin_look_alikes(text: str) -> str:
    """Look-alike letters read as Latin in words that also hold ASCII letters or digits
    (one for one: positions do not move)."""
    def latin(m: re.Match[str]) -> str:
        word = m.group()
        if _LOOK_ALIKE.search(word) and _ASCII_ALNUM.search(word):
            return word.translate(_LOOK_ALIKES)
        return word

    return _WORD.sub(latin, text)


def _normalised(text: str) -> tuple[str, list[int]]:
    """NFKC piece by piece, with where each output character came from."""
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
        if j == i + 1 and _SPACE_CHAR.fullmatch(text[i]) and _inside_token(text, i):
            i = j  # "ghp_ab\u00a0cd": a no-break space does not end a token
            continue
        piece = _normal_piece(text[i:j])
        out.append(piece)
        origin.extend([i] * len(piece))
        i = j
    return "".join(out), origin


def _inside_token(text: str, i: int) -> bool:
    """Whether ``text[i]`` sits between two token characters."""
    return 0 < i < len(text) - 1 and text[i - 1] in _TOKEN_CHAR and text[i + 1] in _TOKEN_CHAR


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


def span_in_original(
    found: CredentialMatch, origin: list[int], length: int
) -> CredentialMatch:
    """Map a finding on the normalised text back onto the reader's text."""
    start = origin[found.start] if found.start < len(origin) else length
    k = found.end
    while 0 < k < len(origin) and origin[k] == origin[found.end - 1]:
        k += 1  # the rest of the output the last character's cluster made
    end = origin[k] if 0 < k < len(origin) else length
    return CredentialMatch(found.kind, found.label, start, max(start, end))


