"""Stage 2 of a turn: recognise social openers and answer them from a template.

"Hello" names no documented subject, so the refusal gate would refuse it and tell the
reader, on their first message, that the assistant is broken. A greeting, a thank-you,
a farewell or a "who are you / what can you do" is therefore answered here, from a
template naming the site, with no retrieval and no model call.

Only input that is social *and nothing else* is claimed. The input is normalised, cut
into units (words; single characters for Han and kana, which are written without
spaces) and must be covered end to end by phrases from the inventory (the data file
``social_phrases.json``). Anything left over ("hi, how do I authenticate?", "hello world
example", "thanks.md") means the input carries a subject, and `match_social` returns None
so the turn takes the normal path.

Decisions worth knowing:

* Language codes: ``en es fr de pt it nl ru hi hi-Latn zh zh-Hant ja ko``. Romanised
  Hindi (Hinglish: "namaste", "shukriya", "aap kaun ho") is its own code, ``hi-Latn``,
  answered in romanised Hindi: a reader who typed Latin script gets Latin script back.
  Chinese written with traditional-only characters (謝謝, 再見, 你是誰) is ``zh-Hant``;
  input that reads the same in both scripts (你好) is ``zh``.
* Several social parts combine ("hi, who are you?", "ok thanks, bye"); the reply answers
  the one that most needs answering: identity, then farewell, then thanks, then greeting.
* Fillers ("ok", "great", "again", "for your help") and addressees ("bot", "DocPilot",
  the site's own name) may join social phrases but never make an input social alone.
* Elongations are tolerated ("hiii", "thxxx", "goood morning", "byee"): a word also
  matches with its runs of three or more letters cut to one or two, and its final
  repeated letter cut to one. Accents on Latin, Greek and Cyrillic letters are ignored
  ("adios" = "adiós"); marks of other scripts (Devanagari vowel signs) are kept.
* Templates use ``{site}`` and nothing else. It is replaced with ``str.replace``, never
  ``str.format``, so braces in an owner's template are plain text; the site name is
  escaped for Markdown because it is plain text too.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Literal, cast

Intent = Literal["greeting", "thanks", "farewell", "identity"]
# A filler joins social phrases but carries no intent of its own.
Role = Literal["greeting", "thanks", "farewell", "identity", "filler"]

# Longer inputs carry a subject (or are not small talk); never claim them.
MAX_SOCIAL_CHARS = 80

# When an input combines intents, the reply answers the first of these it contains.
INTENT_PRIORITY: tuple[Intent, ...] = ("identity", "farewell", "thanks", "greeting")

# Language of the reply when the input is only language-neutral ("👋", "ok 🙏").
FALLBACK_LANGUAGE = "en"

SITE_PLACEHOLDER = "{site}"


@dataclass(frozen=True)
class SocialReply:
    """A social input recognised, and the templated reply to it."""

    intent: Intent
    language: str
    markdown: str


# The phrase inventory and the reply templates are data (``social_phrases.json``, shipped in
# the package and in the browser wheel): language -> role -> phrases, and language -> intent
# -> Markdown with {site}. Write phrases the way a reader types them; they pass through the
# same normalisation as the input, so case, accents and apostrophes do not matter
# ("What's up" = "whats up"). A phrase may appear in several languages (a loanword: "hallo"
# in de and nl) but must have the same role in each; the first language listing it is its
# primary one. Template claims must stay true of the product: answers come only from the
# site's documentation, with citations, and an uncovered question gets the closest pages.
PHRASES_FILE = Path(__file__).with_name("social_phrases.json")

_ROLES = frozenset(("greeting", "thanks", "farewell", "identity", "filler"))
_INTENTS = frozenset(INTENT_PRIORITY)


def _load_tables(
    path: Path,
) -> tuple[dict[Role, list[str]], dict[str, dict[Role, list[str]]], dict[str, dict[Intent, str]]]:
    """Read and check the data file; a malformed table is named with the file."""
    data = json.loads(path.read_text(encoding="utf-8"))

    def by_role(value: object, where: str) -> dict[Role, list[str]]:
        if not isinstance(value, dict) or not set(value) <= _ROLES:
            raise ValueError(f"{path.name}: {where}: expected roles among {sorted(_ROLES)}")
        for role, phrases in value.items():
            if not isinstance(phrases, list) or not all(isinstance(p, str) for p in phrases):
                raise ValueError(f"{path.name}: {where}.{role}: expected a list of phrases")
        return cast("dict[Role, list[str]]", value)

    neutral = by_role(data.get("neutral"), "neutral")
    phrases = {lang: by_role(roles, f"phrases.{lang}") for lang, roles in data["phrases"].items()}
    templates: dict[str, dict[Intent, str]] = {}
    for lang, by_intent in data["templates"].items():
        if not isinstance(by_intent, dict) or set(by_intent) != _INTENTS or not all(
            isinstance(text, str) for text in by_intent.values()
        ):
            raise ValueError(f"{path.name}: templates.{lang}: expected one string per intent")
        templates[lang] = by_intent
    return neutral, phrases, templates


_NEUTRAL_PHRASES, _PHRASES, _TEMPLATES = _load_tables(PHRASES_FILE)

DEFAULT_TEMPLATES: Mapping[str, Mapping[Intent, str]] = MappingProxyType(
    {language: MappingProxyType(by_intent) for language, by_intent in _TEMPLATES.items()}
)

# ---------------------------------------------------------------------------------------
# Normalisation and matching.
# ---------------------------------------------------------------------------------------

# Removed rather than turned into a space, so "what's" and "whats" meet.
_APOSTROPHES = frozenset("'’‘ʼ")
# Symbols that are phrases in their own right; every other symbol and emoji is a separator.
_KEPT_SYMBOLS = frozenset("👋🙏")
# Diacritics on letters below this code point (Latin, Greek, Cyrillic) are ignored.
_FOLD_MARKS_BELOW = 0x0530

_RUN_OF_THREE_OR_MORE = re.compile(r"(.)\1{2,}")
_FINAL_REPEAT = re.compile(r"(.)\1+$")


def _is_unspaced_char(ch: str) -> bool:
    """True for Han and kana, which are written without spaces and matched per character."""
    code = ord(ch)
    return (
        0x3040 <= code <= 0x30FF  # Hiragana, Katakana (with the prolonged sound mark)
        or code == 0x3005  # 々, the ideographic iteration mark
        or 0x3400 <= code <= 0x4DBF  # CJK extension A
        or 0x4E00 <= code <= 0x9FFF  # CJK unified ideographs
        or 0xF900 <= code <= 0xFAFF  # CJK compatibility ideographs
        or 0x20000 <= code <= 0x3FFFF  # CJK extension planes
    )


def _normalise(text: str) -> str:
    """Case-fold, NFKC, drop Latin/Greek/Cyrillic accents, turn punctuation into spaces."""
    text = "".join(ch for ch in text if ch not in _APOSTROPHES)
    decomposed = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", text).casefold())
    out: list[str] = []
    base = 0  # code point of the letter the next mark would attach to; 0 after a separator
    for ch in decomposed:
        category = unicodedata.category(ch)
        if category[0] == "M":
            # Marks after a separator are debris (emoji variation selectors, say).
            if base >= _FOLD_MARKS_BELOW:
                out.append(ch)
        elif category[0] in "LN":
            out.append(ch)
            base = ord(ch)
        elif ch in _KEPT_SYMBOLS:
            out.append(f" {ch} ")
            base = 0
        else:
            out.append(" ")
            base = 0
    return unicodedata.normalize("NFC", "".join(out))


def _units(text: str) -> tuple[str, ...]:
    """Cut text into match units: words, and single characters of Han and kana."""
    units: list[str] = []
    for word in _normalise(text).split():
        run: list[str] = []
        for ch in word:
            if _is_unspaced_char(ch):
                if run:
                    units.append("".join(run))
                    run = []
                units.append(ch)
            else:
                run.append(ch)
        if run:
            units.append("".join(run))
    return tuple(units)


def _spellings(unit: str) -> frozenset[str]:
    """The unit and its de-elongated forms: "hiii" -> hi, "goood" -> good, "byee" -> bye."""
    if len(unit) < 2:
        return frozenset((unit,))
    to_one = _RUN_OF_THREE_OR_MORE.sub(r"\1", unit)
    to_two = _RUN_OF_THREE_OR_MORE.sub(r"\1\1", unit)
    return frozenset(
        (
            unit,
            to_one,
            to_two,
            _FINAL_REPEAT.sub(r"\1", unit),
            _FINAL_REPEAT.sub(r"\1", to_two),
        )
    )


@dataclass(frozen=True)
class _Phrase:
    units: tuple[str, ...]
    role: Role
    # Languages using this phrase, primary first; empty for language-neutral phrases.
    languages: tuple[str, ...]


def _build_inventory(
    phrases: Mapping[str, Mapping[Role, list[str]]], neutral: Mapping[Role, list[str]]
) -> dict[str, tuple[_Phrase, ...]]:
    """Index every phrase by its first unit; one role per phrase across all languages."""
    roles: dict[tuple[str, ...], Role] = {}
    languages: dict[tuple[str, ...], list[str]] = {}
    sources: list[tuple[str | None, Mapping[Role, list[str]]]] = [(None, neutral)]
    sources += list(phrases.items())
    for language, by_role in sources:
        for role, listing in by_role.items():
            for phrase in listing:
                units = _units(phrase)
                if not units:
                    raise ValueError(f"social phrase {phrase!r} ({language}) normalises to nothing")
                seen = roles.setdefault(units, role)
                if seen != role:
                    raise ValueError(
                        f"social phrase {phrase!r} is {role!r} in {language} "
                        f"but {seen!r} in {languages[units] or 'the neutral list'}"
                    )
                listed = languages.setdefault(units, [])
                if language is not None and language not in listed:
                    listed.append(language)
    index: dict[str, list[_Phrase]] = {}
    for units, role in roles.items():
        index.setdefault(units[0], []).append(_Phrase(units, role, tuple(languages[units])))
    return {first: tuple(entries) for first, entries in index.items()}


_INVENTORY = _build_inventory(_PHRASES, _NEUTRAL_PHRASES)

_missing_templates = sorted(set(_PHRASES) - set(_TEMPLATES))
if _missing_templates:
    raise ValueError(f"social phrases for {_missing_templates} have no reply templates")


def _cover(units: tuple[str, ...], addressees: tuple[_Phrase, ...]) -> list[_Phrase] | None:
    """Cover all units with phrases, fewest phrases first, then fewest fillers; None if none."""
    spellings = [_spellings(unit) for unit in units]
    # cost[i]: (phrases, fillers) of the best cover of units[:i]; last[i]: its last phrase
    # and where that phrase starts. Unreached positions stay None.
    cost: list[tuple[int, int] | None] = [None] * (len(units) + 1)
    last: list[tuple[int, _Phrase] | None] = [None] * (len(units) + 1)
    cost[0] = (0, 0)
    for i, here in enumerate(spellings):
        reached = cost[i]
        if reached is None:
            continue
        candidates = [phrase for s in here for phrase in _INVENTORY.get(s, ())]
        candidates += [phrase for phrase in addressees if phrase.units[0] in here]
        for phrase in candidates:
            end = i + len(phrase.units)
            if end > len(units) or not all(
                unit in spellings[i + k] for k, unit in enumerate(phrase.units)
            ):
                continue
            new = (reached[0] + 1, reached[1] + (phrase.role == "filler"))
            known = cost[end]
            if known is None or new < known:
                cost[end] = new
                last[end] = (i, phrase)
    path: list[_Phrase] = []
    end = len(units)
    while end > 0:
        step = last[end]
        if step is None:
            return None
        end, phrase = step
        path.append(phrase)
    path.reverse()
    return path


def _reply_language(path: list[_Phrase]) -> str:
    """The language most of the phrases belong to; intent phrases weigh double fillers."""
    weight: dict[str, float] = {}
    first_seen: dict[str, int] = {}
    for phrase in path:
        if not phrase.languages:
            continue
        share = (0.5 if phrase.role == "filler" else 1.0) / len(phrase.languages)
        for language in phrase.languages:
            weight[language] = weight.get(language, 0.0) + share
            first_seen.setdefault(language, len(first_seen))
    if not weight:
        return FALLBACK_LANGUAGE
    return max(weight, key=lambda language: (weight[language], -first_seen[language]))


def _escape_markdown(text: str) -> str:
    """Backslash-escape characters that would turn a plain site name into Markdown."""
    return "".join(f"\\{ch}" if ch in "\\`*_[]<>#|~" else ch for ch in text)


def _template(
    language: str, intent: Intent, templates: Mapping[str, Mapping[str, str]] | None
) -> str:
    """Owner's template for the language, else ours, else the owner's English, else ours."""
    owner = templates or {}
    for candidate in (language, FALLBACK_LANGUAGE):
        if intent in owner.get(candidate, {}):
            return owner[candidate][intent]
        if intent in DEFAULT_TEMPLATES.get(candidate, {}):
            return DEFAULT_TEMPLATES[candidate][intent]
    return DEFAULT_TEMPLATES[FALLBACK_LANGUAGE][intent]


def match_social(
    text: str, site_name: str, templates: Mapping[str, Mapping[str, str]] | None = None
) -> SocialReply | None:
    """Answer `text` from a template if it is purely social; None if it carries anything else.

    `templates` (language -> intent -> Markdown) override the defaults per language and
    intent; a missing one falls back to the default of that language, then to English.
    ``{site}`` in a template becomes the escaped site name; no other braces are special.
    """
    if len(text.strip()) > MAX_SOCIAL_CHARS:
        return None
    units = _units(text)
    if not units:
        return None
    addressees: tuple[_Phrase, ...] = ()
    site_units = _units(site_name)
    if site_units:
        addressees = (_Phrase(site_units, "filler", ()),)
    path = _cover(units, addressees)
    if path is None:
        return None
    roles = {phrase.role for phrase in path}
    intent = next((intent for intent in INTENT_PRIORITY if intent in roles), None)
    if intent is None:
        return None
    language = _reply_language(path)
    markdown = _template(language, intent, templates).replace(
        SITE_PLACEHOLDER, _escape_markdown(site_name.strip())
    )
    return SocialReply(intent=intent, language=language, markdown=markdown)
