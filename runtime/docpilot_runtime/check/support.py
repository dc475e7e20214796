"""Whether excerpts support an answer that carries no citation marker, stated as a rule.

A model may answer without writing a marker: prose with no ``[n]``, or an `answer`
call whose ``citations`` list names valid ids that its text never cites. Such an answer
is shown only when its content is found in the excerpts, never because an id was listed
(a listed id must not launder invented text). The rule, sentence by sentence:

* **Numbers** it states occur in the excerpt as written ("$14" needs "$14"; "8000" is
  found in "127.0.0.1:8000", not in "80000"; thousands separators are ignored).
* **Names** occur in the excerpt (case-insensitive): every word of a code span or code
  block, every identifier-like word (a digit, "_", ".", "/", ":", a leading "-", or a
  capital inside it: ``max_steps``, ``mkdocs.yml``, ``--port``, ``DocPilot``), and in a
  language that does not capitalise every noun, every capitalised word past the
  sentence's first ("Docker", "Google Analytics").
* **Words**: of its content words (tokens that are no function word of any language and
  none of the few words every answer uses, such as "use" or "documentation"), at least
  ``WORD_SHARE`` occur in the excerpt or in the reader's question, and at least one in
  the excerpt.

A sentence with no number, no name and fewer than ``CLAIM_WORDS`` content words claims
nothing ("I hope this helps.") and needs no support; a heading needs none either. The
answer is supported when every claiming sentence, list item, table row and code block is
supported by one of the candidate excerpts; each sentence and item is then cited to the
excerpt that supports it best (the most of its words found, then the first listed), so
a sentence is re-attached to the excerpt that holds its facts. Otherwise it is not
shown as an answer at all.

Pure Python (standard library, and the one tokenizer the search uses).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from docpilot_runtime.retrieve.followup import english_words, function_words, noun_capitalising
from docpilot_runtime.retrieve.tokenize import FUNCTION_WORDS, tokenize
from docpilot_runtime.shared.fences import open_fence

WORD_SHARE = 0.75
CLAIM_WORDS = 3
_GENERIC_TEXT = """
use can need set make allow let support provide include give take add want like able
documentation docs doc excerpt excerpts section page mention describe say state answer
question following example step way also instead simply just here please note yes
"""
_MARKER = re.compile(r"\s?\[\[?[^\[\]\n]{0,300}\]?\]")
_ID_MARKER = re.compile(r"\s?\[\[([^\[\]\n]{1,300})\]\]")
_NUMBER = re.compile(r"(?<![\w.$€£])[$€£]?\d+(?:[.,]\d+)*%?")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_WORD = re.compile(r"[^\s`*_()\[\]<>\"'“”‘’]+")
_IDENTIFIER = re.compile(r"\d|[_./:]|^-|[a-z][A-Z]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")
_LIST_ITEM = re.compile(r"^\s*(?:[-+*]|\d{1,9}[.)])\s+")
_HEADING = re.compile(r"^ {0,3}#{1,6}(?:\s|$)")
_TRAILING = ".,;:!?)"


@lru_cache(maxsize=1)
def _noun_capitalising() -> frozenset[str]:
    """Function words of a language that capitalises every noun and that English does
    not share: two of them in a sentence say its capitals are nouns, not names."""
    return noun_capitalising() - FUNCTION_WORDS


@lru_cache(maxsize=1)
def _generic() -> frozenset[str]:
    return frozenset(tokenize(_GENERIC_TEXT))


@dataclass(frozen=True)
class Excerpt:
    """A candidate source: its id and the text it gave the model (title included)."""

    id: str
    text: str


@dataclass(frozen=True)
class _Block:
    """A block of the answer: ``parts`` are what the rule judges in it (a paragraph's
    sentences, an item's or a row's text, a code block's body; none for a heading or a
    blank line), ``lines`` its text as written."""

    kind: str  # "paragraph" | "item" | "row" | "code" | "other"
    lines: tuple[str, ...]
    parts: tuple[str, ...] = ()
    prefix: str = ""  # an item's marker ("- ", "2. ")


@dataclass(frozen=True)
class Judged:
    """The rule's verdict on one part: the excerpt that supports it ("" for a part that
    claims nothing), or why none does."""

    text: str
    source: str
    claims: bool
    why: str = ""


def _plain(text: str) -> str:
    return _MARKER.sub("", text)


def _numbers(text: str) -> list[str]:
    return [n.replace(",", "") for n in _NUMBER.findall(_plain(text))]


def _number_in(number: str, text: str) -> bool:
    body = re.escape(number)
    return re.search(rf"(?<![\d]){body}(?![\d])", text.replace(",", "")) is not None


def _names(text: str, code: bool) -> list[str]:
    """Words that name something: see the module docstring."""
    plain = _plain(text)
    names = [w for span in _CODE_SPAN.findall(plain) for w in span[1].split()]
    if code:
        return [w for w in plain.split() if re.search(r"[^\W\d_]", w)]
    outside = _CODE_SPAN.sub(" ", plain)
    words = [w.strip(_TRAILING) for w in _WORD.findall(outside)]
    capitalise_nouns = len(set(tokenize(outside)) & _noun_capitalising()) >= 2
    for position, word in enumerate(w for w in words if w):
        identifier = _IDENTIFIER.search(word) and re.search(r"[^\W\d_]", word)
        capital = position and word[:1].isupper() and not capitalise_nouns
        if (identifier or capital) and len(word) > 1:
            names.append(word)
    return names


def _name_in(name: str, folded: str) -> bool:
    """Whether ``name`` occurs in the case-folded text as a word of its own."""
    body = re.escape(name.casefold().strip(_TRAILING))
    return re.search(rf"(?<!\w){body}(?!\w)", folded) is not None


def _content_words(text: str) -> list[str]:
    skip = function_words() | _generic()
    return list(
        dict.fromkeys(
            t for t in tokenize(_CODE_SPAN.sub(" ", _plain(text)))
            if t not in skip and not t.isdigit() and len(t) > 1
        )
    )


def claims(text: str, code: bool = False) -> bool:
    """Whether a part says something that needs support."""
    if code:
        return bool(_names(text, True))
    return bool(
        _numbers(text) or _names(text, False) or len(_content_words(text)) >= CLAIM_WORDS
    )


def supports(excerpt: str, text: str, question: str = "", code: bool = False) -> int | None:
    """How many of the part's content words ``excerpt`` holds when it supports the part
    (the rule of the module docstring), None when it does not."""
    folded = excerpt.casefold()
    if any(not _number_in(n, excerpt) for n in _numbers(text)):
        return None
    if any(not _name_in(name, folded) for name in _names(text, code)):
        return None
    if code:
        return 0
    words = _content_words(text)
    if not words:
        return 0
    have = set(tokenize(excerpt))
    asked = set(tokenize(question))
    in_excerpt = sum(w in have for w in words)
    found = sum(w in have or w in asked for w in words)
    # A number or a name the excerpt holds is evidence from it too: "The default port is
    # 8000." may take every word from the question.
    held = len(_numbers(text)) + len(_names(text, code))
    if in_excerpt + held == 0 or found < WORD_SHARE * len(words):
        return None
    return in_excerpt + held


def _blocks(markdown: str) -> list[_Block]:
    """The answer cut into blocks, in order (see `_Block`)."""
    blocks: list[_Block] = []
    lines = markdown.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = open_fence(line)
        if fence is not None:
            start = i
            i += 1
            while i < len(lines) and not fence.closed_by(lines[i]):
                i += 1
            body = "\n".join(lines[start + 1 : i])
            blocks.append(_Block("code", tuple(lines[start : i + 1]), (body,)))
            i += 1
            continue
        stripped = line.strip()
        item = _LIST_ITEM.match(line)
        if not stripped or _HEADING.match(line):
            blocks.append(_Block("other", (line,)))
        elif stripped.startswith("|"):
            blocks.append(_Block("row", (line,), (stripped,)))
        elif item:
            blocks.append(_Block("item", (line,), (line[item.end() :],), item.group(0)))
        else:
            start = i
            while i + 1 < len(lines) and _continues(lines[i + 1]):
                i += 1
            joined = " ".join(s.strip() for s in lines[start : i + 1])
            sentences = tuple(s for s in _SENTENCE_END.split(joined) if s)
            blocks.append(_Block("paragraph", tuple(lines[start : i + 1]), sentences))
        i += 1
    return blocks


def _continues(line: str) -> bool:
    """Whether a line goes on the paragraph before it."""
    return bool(
        line.strip()
        and not _LIST_ITEM.match(line)
        and open_fence(line) is None
        and not _HEADING.match(line)
        and not line.strip().startswith("|")
    )


def judge(markdown: str, excerpts: Sequence[Excerpt], question: str = "") -> list[Judged]:
    """Every part of the answer with the excerpt that supports it (see the module)."""
    return [
        _judge(part, block.kind == "code", excerpts, question)
        for block in _blocks(markdown)
        for part in block.parts
    ]


def _judge(text: str, code: bool, excerpts: Sequence[Excerpt], question: str) -> Judged:
    if not claims(text, code):
        return Judged(text, "", False)
    best: tuple[int, str] | None = None
    for excerpt in excerpts:
        score = supports(excerpt.text, text, question, code)
        if score is not None and (best is None or score > best[0]):
            best = (score, excerpt.id)
    if best is None:
        return Judged(text, "", True, _why(text, code, excerpts))
    return Judged(text, best[1], True)


def _why(text: str, code: bool, excerpts: Sequence[Excerpt]) -> str:
    """What the excerpts lack, in words, for the log."""
    joined = "\n".join(e.text for e in excerpts)
    missing = [n for n in _numbers(text) if not _number_in(n, joined)]
    if missing:
        return f"the number {missing[0]} is in no excerpt"
    folded = joined.casefold()
    names = [n for n in _names(text, code) if not _name_in(n, folded)]
    if names:
        return f"the name {names[0]!r} is in no excerpt"
    return "its words are not found together in any excerpt"


def _cite(text: str, source: str) -> str:
    """``text`` with ``[[source]]`` before its closing punctuation."""
    body = text.rstrip()
    kept = body.rstrip(_TRAILING)
    return f"{kept} [[{source}]]{body[len(kept):]}{text[len(body):]}"


@dataclass(frozen=True)
class Attached:
    """An answer the rule accepted, its claims cited; or the parts no excerpt supports."""

    markdown: str | None
    unsupported: tuple[Judged, ...] = ()


def attach(markdown: str, excerpts: Sequence[Excerpt], question: str = "") -> Attached:
    """``markdown`` with each claiming sentence and item cited (``[[ID]]``) to the
    excerpt that supports it; None as its markdown when a part is supported by none,
    or when nothing in it claims anything."""
    out: list[str] = []
    unsupported: list[Judged] = []
    claimed = False
    for block in _blocks(markdown):
        verdicts = [_judge(p, block.kind == "code", excerpts, question) for p in block.parts]
        unsupported += [v for v in verdicts if v.claims and not v.source]
        claimed = claimed or any(v.claims for v in verdicts)
        if block.kind == "paragraph":
            out.append(" ".join(_cite(v.text, v.source) if v.source else v.text for v in verdicts))
        elif block.kind == "item" and verdicts[0].source:
            out.append(block.prefix + _cite(verdicts[0].text, verdicts[0].source))
        else:
            out.extend(block.lines)
    if unsupported or not claimed:
        return Attached(None, tuple(unsupported))
    return Attached("\n".join(out))


_NUMBERED = re.compile(r"(?<!\\)\[(\d+)\]")


def _outside_code(markdown: str, change: Callable[[str], str]) -> str:
    """``markdown`` with ``change`` applied to its text outside code blocks and spans."""
    out: list[str] = []
    fence = None
    for line in markdown.split("\n"):
        if fence is not None:
            out.append(line)
            if fence.closed_by(line):
                fence = None
            continue
        fence = open_fence(line)
        if fence is not None:
            out.append(line)
            continue
        pieces = re.split(r"(`+[^`]*?`+)", line)
        out.append("".join(p if i % 2 else change(p) for i, p in enumerate(pieces)))
    return "\n".join(out)


def reattach(
    markdown: str, cited: Mapping[int, str], excerpts: Sequence[Excerpt], question: str = ""
) -> str | None:
    """A validated answer (markers ``[n]``, ``cited`` mapping n to its id) whose claims
    cite an excerpt that does not hold them, with each such sentence or item cited to the
    excerpt that does (as ``[[ID]]`` markers, to be validated again); None when every
    claim already cites an excerpt holding it, or none holds the ones that do not."""
    by_id = {e.id: e for e in excerpts}

    def named(match: re.Match[str]) -> str:
        return f"[[{cited.get(int(match.group(1)), '?')}]]"

    as_ids = _outside_code(markdown, lambda text: _NUMBERED.sub(named, text))
    changed = False

    def mend(text: str) -> str:
        nonlocal changed
        ids = _ID_MARKER.findall(text)
        plain = _plain(text)
        if not ids or not claims(plain):
            return text
        if any(i in by_id and supports(by_id[i].text, plain, question) is not None for i in ids):
            return text
        verdict = _judge(plain, False, excerpts, question)
        if not verdict.source:
            return text
        changed = True
        return _cite(_ID_MARKER.sub("", text).rstrip(), verdict.source)

    mapped = _map_parts(as_ids, mend)
    return mapped if changed else None


def unfounded(markdown: str, excerpts: Sequence[Excerpt]) -> str:
    """The first number or name a claim of the answer states that no excerpt holds ("" when
    every one is in some excerpt): the part of the rule that does not depend on the
    answer's language, applied to answers that cite inline ("The capital of Australia is
    Canberra [1]." cites an excerpt and names what none of them says)."""
    joined = "\n".join(e.text for e in excerpts)
    folded = joined.casefold()
    for block in _blocks(markdown):
        code = block.kind == "code"
        for part in block.parts:
            plain = _plain(part)
            for number in _numbers(plain):
                if not _number_in(number, joined):
                    return number
            for name in _names(plain, code):
                if not _name_in(name, folded):
                    return name
    return ""


def other_language(text: str) -> bool:
    """Whether a sentence is written in another language than English: two function
    words of another language, or a script without spaces. The word rule cannot read it."""
    own = function_words() - english_words()
    return sum(t in own for t in set(tokenize(_plain(text)))) >= 2 or any(
        "\u2e80" <= c <= "\u9fff" or "\uac00" <= c <= "\ud7af" for c in text
    )


@dataclass(frozen=True)
class Verified:
    """An answer every claim of which an excerpt holds, each cited to it (``[[ID]]``
    markers, to be validated again); or None and the first claim none holds."""

    markdown: str | None
    why: str = ""
    moved: bool = False  # a claim was cited to another excerpt than the model's


def verify(
    markdown: str, cited: Mapping[int, str], excerpts: Sequence[Excerpt], question: str = ""
) -> Verified:
    """The strict reading of an answer that cites inline (``[n]``, ``cited`` mapping n to
    its id), for models whose citations cannot be trusted: every claiming sentence and item
    must be held by one excerpt, its own cited one first, and is cited to it; a sentence in
    another language, which the word rule cannot read, needs only its numbers and names in
    an excerpt and keeps its markers. One claim no excerpt holds withholds the answer."""
    by_id = {e.id: e for e in excerpts}
    joined = "\n".join(e.text for e in excerpts)

    def named(match: re.Match[str]) -> str:
        return f"[[{cited.get(int(match.group(1)), '?')}]]"

    as_ids = _outside_code(markdown, lambda text: _NUMBERED.sub(named, text))
    problem = ""
    moved = False

    def check(text: str) -> str:
        nonlocal problem, moved
        own = [i for i in _ID_MARKER.findall(text) if i in by_id]
        plain = _plain(text)
        if problem or not claims(plain):
            return text
        if other_language(plain):
            stray = unfounded(plain, excerpts)
            if stray:
                problem = f"{stray!r} is in no excerpt"
            return text
        ordered = [by_id[i] for i in own] + [e for e in excerpts if e.id not in own]
        verdict = _judge(plain, False, ordered, question)
        if not verdict.source:
            problem = _why(plain, False, excerpts) if joined else "no excerpt"
            return text
        moved = moved or verdict.source not in own
        return _cite(_ID_MARKER.sub("", text).rstrip(), verdict.source)

    def code(block: _Block) -> None:
        nonlocal problem
        stray = unfounded("\n".join(block.lines), excerpts)
        if stray and not problem:
            problem = f"{stray!r} is in no excerpt"

    mapped = _map_parts(as_ids, check, code)
    if problem:
        return Verified(None, problem)
    return Verified(mapped, moved=moved)


def _map_parts(
    markdown: str, part: Callable[[str], str], code: Callable[[_Block], None] | None = None
) -> str:
    """``markdown`` with each paragraph sentence and list item replaced by ``part`` of it
    (sentences joined by a space); code blocks are shown to ``code`` and kept."""
    out: list[str] = []
    for block in _blocks(markdown):
        if block.kind == "paragraph":
            out.append(" ".join(part(p) for p in block.parts))
        elif block.kind == "item":
            out.append(block.prefix + part(block.parts[0]))
        else:
            if block.kind == "code" and code is not None:
                code(block)
            out.extend(block.lines)
    return "\n".join(out)
