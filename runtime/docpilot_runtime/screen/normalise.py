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


