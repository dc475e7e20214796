"""Reading what a model really sent: tool calls written as text, declines, degenerate text.

Small models rarely keep to a wire protocol (issue 22, measured with Qwen2.5-Coder 0.5B
and 1.5B behind llama.cpp's server): they write a tool call as a fenced JSON block, as
Qwen's ``<tool_call>`` form, or as a bare JSON object, which a server that cannot parse
it returns as text; they answer in prose without any tool; they write "NOT COVERED";
they echo the rules back or repeat themselves until max_tokens. This module turns such
text into the calls and answers it means, and names what is unusable, so the ladder can
say why a reply was not used. Nothing here decides what a reader sees: the validator
and the support check do.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

from docpilot_runtime.providers import ToolCall

DECLINE = "NOT COVERED"
_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)
_FENCED = re.compile(r"(?ms)^ {0,3}(`{3,}|~{3,})[ \t]*(?:json|JSON)?[ \t]*\n(.*?)^ {0,3}\1[ \t]*$")
_DECLINES = re.compile(
    r"not covered|(?:do|does) not (?:cover|say|mention|describe|contain)|"
    r"(?:no|none of the) (?:excerpt|information)",
    re.I,
)
_MARKERS = re.compile(r"\[\[?[^\[\]\n]{0,300}\]?\]")
_ADDRESSES = re.compile(r"\b(?:https?|ftp|mailto):[^\s)>\]]*", re.I)
_ECHO_WORDS = 8  # the length of a run of words that counts as copied from the rules
_ECHO_SHARE = 0.5  # an answer this much copied from the rules is an echo
_LOOP_WORDS = 6  # a run of words repeated LOOP_TIMES times is a loop
_LOOP_TIMES = 3
MIN_ANSWER_CHARS = 2  # letters and digits an answer needs beyond its markers
DECLINE_LEAD = 40  # a decline phrase this near the start makes the reply a decline
DECLINE_RESIDUE = 60  # letters and digits beside a decline that still say nothing


@dataclass(frozen=True)
class TextCalls:
    """Tool calls found in a reply's text, and the text around them."""

    calls: tuple[ToolCall, ...]
    rest: str  # the text with the calls taken out


def _json_objects(text: str) -> Iterable[tuple[Any, int, int]]:
    """Every JSON value that starts at a "{" of ``text`` and parses (the first one
    from each position; nested ones are skipped once an outer one parsed)."""
    decoder = json.JSONDecoder()
    position = text.find("{")
    while position >= 0:
        try:
            value, end = decoder.raw_decode(text, position)
        except ValueError:
            position = text.find("{", position + 1)
            continue
        yield value, position, end
        position = text.find("{", end)


def _as_call(value: Any, names: Collection[str], number: int) -> ToolCall | None:
    """A JSON object read as a call of one of ``names``: ``{"name", "arguments"}``
    (arguments an object or its JSON), ``{"function": {...}}``, ``{"tool", "parameters"}``,
    or, for the answer tool, its arguments alone (an object with ``markdown``)."""
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict):
        value = value["function"]
    name = value.get("name", value.get("tool"))
    arguments = value.get("arguments", value.get("parameters", value.get("args")))
    if name is None and "answer" in names and isinstance(value.get("markdown"), str):
        name, arguments = "answer", value
    if not isinstance(name, str) or name not in names:
        return None
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    try:
        parsed = json.loads(raw) if raw.strip() else {}
    except ValueError:
        parsed = None
    return ToolCall(
        f"text_call_{number}", name, parsed if isinstance(parsed, dict) else None, raw
    )


def text_tool_calls(text: str, names: Collection[str]) -> TextCalls:
    """The calls of tools in ``names`` that ``text`` writes out (Qwen's ``<tool_call>``
    form, fenced JSON blocks, bare JSON objects), in order, and the text without them."""
    found: list[tuple[int, ToolCall]] = []
    spans: list[tuple[int, int]] = []

    def free(start: int, end: int) -> bool:
        return not any(s < end and start < e for s, e in spans)

    for pattern, group in ((_TAGGED, 1), (_FENCED, 2)):
        for match in pattern.finditer(text):
            if not free(*match.span()):
                continue
            inside = [
                (match.start(group) + start, call)
                for value, start, _ in _json_objects(match.group(group))
                if (call := _as_call(value, names, 0)) is not None
            ]
            if inside:
                found.extend(inside)
                spans.append(match.span())
    for value, start, end in _json_objects(text):
        call = _as_call(value, names, 0) if free(start, end) else None
        if call is not None:
            found.append((start, call))
            spans.append((start, end))
    rest, last = [], 0
    for start, end in sorted(spans):
        rest.append(text[last:start])
        last = end
    rest.append(text[last:])
    calls = tuple(
        ToolCall(f"text_call_{i}", call.name, call.arguments, call.raw_arguments)
        for i, (_, call) in enumerate(sorted(found, key=lambda pair: pair[0]), start=1)
    )
    return TextCalls(calls, "".join(rest).strip())


def json_answer(text: str, keys: tuple[str, ...] = ("answer", "markdown")) -> dict[str, Any] | None:
    """The object of a reply written as one JSON object (a schema-constrained reply, or
    a model that wrapped its answer in JSON), when it holds an answer string under one
    of ``keys``; None otherwise."""
    stripped = text.strip()
    fenced = _FENCED.fullmatch(stripped)
    if fenced:
        stripped = fenced.group(2).strip()
    if not stripped.startswith("{"):
        return None
    for value, _, _ in _json_objects(stripped):
        if isinstance(value, dict) and any(isinstance(value.get(k), str) for k in keys):
            return value
        break
    return None


def declines(text: str) -> bool:
    """The reply says the excerpts do not answer (NOT COVERED, "the excerpts do not
    cover ..."), first or with little else beside it."""
    found = _DECLINES.search(text)
    return found is not None and (found.start() < DECLINE_LEAD or only_declines(text))


def only_declines(text: str) -> bool:
    """The reply is a decline and nothing more: with the phrases and markers taken out,
    fewer than DECLINE_RESIDUE letters and digits are left ("[1] NOT COVERED [2] NOT
    COVERED" cites, and still answers nothing)."""
    if not _DECLINES.search(text):
        return False
    residue = _DECLINES.sub(" ", _MARKERS.sub(" ", text))
    return len(re.sub(r"\W+", "", residue)) < DECLINE_RESIDUE


def _words(text: str) -> list[str]:
    return re.findall(r"[^\W_]+", text.casefold())


def degenerate(text: str, rules: str) -> str:
    """Why ``text`` cannot be an answer, or "": nothing beyond its markers, a loop (a
    run of words repeated again and again), or an echo of the rules it was given."""
    bare = _MARKERS.sub(" ", text)
    if len(re.sub(r"\W+", "", bare)) < MIN_ANSWER_CHARS:
        return "it holds no text beyond citation markers"
    # Addresses are not words a model loops on: one link named three times is no loop.
    words = _words(_ADDRESSES.sub(" ", bare))
    runs: dict[tuple[str, ...], int] = {}
    for i in range(len(words) - _LOOP_WORDS + 1):
        run = tuple(words[i : i + _LOOP_WORDS])
        runs[run] = runs.get(run, 0) + 1
        if runs[run] >= _LOOP_TIMES:
            return "it repeats itself (a loop)"
    rule_words = _words(rules)
    copied = {
        tuple(rule_words[i : i + _ECHO_WORDS]) for i in range(len(rule_words) - _ECHO_WORDS + 1)
    }
    own = [tuple(words[i : i + _ECHO_WORDS]) for i in range(len(words) - _ECHO_WORDS + 1)]
    if own and sum(run in copied for run in own) / len(own) >= _ECHO_SHARE:
        return "it echoes the instructions"
    return ""
