"""Declarative option tables: one line per key (kind, default, range or choices, one-line doc).

The settings file, the plugin's options and the reference pages all read the same
declarations (`settings_schema.py`), so a key is checked the same way wherever it is
given and documented exactly as it is checked. Adding a key is one `Key(...)` line.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["str", "int", "number", "seconds", "bool", "strings", "str-table", "tables", "any"]

_EXPECTED: dict[str, str] = {
    "str": "a string",
    "int": "an integer",
    "number": "a number",
    "seconds": "a positive number of seconds",
    "bool": "true or false",
    "strings": "a list of strings",
    "str-table": "a table of strings",
    "tables": "a list of tables",
    "any": "a value",
}
_TYPE_TEXT: dict[str, str] = {
    "str": "string",
    "int": "int",
    "number": "number",
    "seconds": "number",
    "bool": "bool",
    "strings": "list of strings",
    "str-table": "table of strings",
    "tables": "list of tables",
    "any": "any",
}


class OptionsError(ValueError):
    """An option with a bad value or name; the message names where, the key and the fix."""


@dataclass(frozen=True)
class Key:
    """One option: what it holds, its default, its limits and a one-line doc."""

    name: str
    kind: Kind
    default: Any
    doc: str
    low: int | float | None = None  # inclusive bounds for int/number
    high: int | float | None = None
    choices: tuple[str, ...] = ()  # a string must be one of these
    prefixes: tuple[str, ...] = ()  # a non-empty string must start with one (case-insensitive)
    literals: tuple[str, ...] = ()  # strings accepted besides the prefixes (endpoint "browser")
    pattern: str = ""  # a non-empty string must match it in full; the value is never quoted
    required: bool = False
    type_doc: str = ""  # the reference page's type cell, when the kind alone says too little
    default_doc: str = ""  # the reference page's default cell, when the default is computed

    def check(self, value: Any, where: str) -> Any:
        """``value`` checked against this key (lists become tuples); raises OptionsError."""
        if not _has_kind(self.kind, value):
            shown = "" if self.pattern else f", got {value!r}"
            raise OptionsError(f"{where}: {self.name} must be {self.expected()}{shown}")
        if self.kind in ("int", "number", "seconds") and not (
            (self.low is None or value >= self.low) and (self.high is None or value <= self.high)
        ):
            raise OptionsError(f"{where}: {self.name} must be {self.expected()}, got {value!r}")
        if isinstance(value, str):
            self._check_string(value, where)
        if self.kind in ("strings", "tables"):
            return tuple(value)
        if self.kind == "str-table":
            return dict(value)
        return float(value) if self.kind in ("number", "seconds") else value

    def _check_string(self, value: str, where: str) -> None:
        if self.choices and value not in self.choices:
            raise OptionsError(
                f"{where}: {self.name} must be one of {', '.join(map(repr, self.choices))}, "
                f"got {value!r}{_did_you_mean(value, self.choices)}"
            )
        if self.pattern and value and not re.fullmatch(self.pattern, value):
            # Not quoted: a key pasted into api_key_env must never reach a log.
            raise OptionsError(f"{where}: {self.name} must be {self.expected()}")
        text = value.strip()
        if (
            self.prefixes
            and text
            and text not in self.literals
            and not text.lower().startswith(self.prefixes)
        ):
            raise OptionsError(
                f"{where}: '{self.name}' must start with {' or '.join(self.prefixes)}"
                f"{' or be ' + ' or '.join(self.literals) if self.literals else ''}, "
                f"got {value!r}"
            )

    def expected(self) -> str:
        """What a valid value is, in words, for error messages."""
        if self.pattern:
            return "the name of an environment variable (letters, digits, underscores)"
        text = _EXPECTED[self.kind]
        if self.low is not None and self.high is not None:
            return f"{text} from {self.low} to {self.high}"
        if self.low is not None:
            return f"{text} of at least {self.low}"
        if self.high is not None:
            return f"{text} up to {self.high}"
        return text

    def type_text(self) -> str:
        """The reference page's type cell."""
        if self.type_doc:
            return self.type_doc
        text = _TYPE_TEXT[self.kind]
        if self.low is not None and self.high is not None:
            return f"{text}, {self.low} to {self.high}"
        if self.low is not None:
            return f"{text}, at least {self.low}"
        if self.high is not None:
            return f"{text}, up to {self.high}"
        return text

    def default_text(self) -> str:
        """The reference page's default cell."""
        if self.default_doc:
            return self.default_doc
        if self.required:
            return "required"
        return f"`{toml_value(self.default)}`"


def _has_kind(kind: str, value: Any) -> bool:
    if kind == "any":
        return True
    if kind == "bool":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if kind == "str":
        return isinstance(value, str)
    if kind == "int":
        return isinstance(value, int)
    if kind == "number":
        return isinstance(value, int | float) and math.isfinite(value)
    if kind == "seconds":
        return isinstance(value, int | float) and math.isfinite(value) and value > 0
    if kind == "strings":
        return isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)
    if kind == "str-table":
        return isinstance(value, Mapping) and all(isinstance(v, str) for v in value.values())
    if kind == "tables":
        return isinstance(value, list | tuple) and all(isinstance(v, Mapping) for v in value)
    raise AssertionError(kind)


def toml_value(value: Any) -> str:
    """A default as the reader would write it in TOML."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        pairs = ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items())
        return "{" + pairs + "}" if pairs else "{}"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _did_you_mean(word: str, known: Any) -> str:
    close = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


def unknown_key_message(where: str, key: str, known: Any, kind: str = "key") -> str:
    """'unknown key' naming the nearest valid one, else listing them all."""
    hint = _did_you_mean(key, known)
    if not hint:
        hint = f" (known: {', '.join(sorted(known))})"
    return f"{where}: unknown {kind} {key!r}{hint}"


@dataclass(frozen=True)
class Table:
    """A group of keys read together: a TOML table, or a part of the plugin's options."""

    name: str  # as the reference page and messages show it: "[server]", "[[providers]]"
    keys: tuple[Key, ...]

    def __getitem__(self, name: str) -> Key:
        for key in self.keys:
            if key.name == name:
                return key
        raise KeyError(name)

    def names(self) -> tuple[str, ...]:
        return tuple(k.name for k in self.keys)

    def defaults(self) -> dict[str, Any]:
        """Every key that has a default, with it (lists as tuples, as `check` returns them)."""
        out: dict[str, Any] = {}
        for key in self.keys:
            if not key.required:
                value = key.default
                out[key.name] = tuple(value) if isinstance(value, list) else value
        return out

    def check(
        self, values: Mapping[str, Any], where: str, extra: tuple[str, ...] = ()
    ) -> dict[str, Any]:
        """The keys given in ``values``, each checked (defaults are not filled in, so the
        caller's dataclass owns them). A key neither declared nor in ``extra`` is an error
        naming the nearest declared one; a required key that is missing is an error."""
        known = self.names()
        for name in values:
            if name not in known and name not in extra:
                raise OptionsError(unknown_key_message(where, str(name), known))
        for key in self.keys:
            if key.required and key.name not in values:
                raise OptionsError(f"{where}: {key.name} is required ({key.doc})")
        return {k.name: k.check(values[k.name], where) for k in self.keys if k.name in values}


def markdown_table(keys: tuple[Key, ...], anchors: bool = False) -> str:
    """The reference page's table for ``keys``; ``anchors`` links each key to its section
    (the plugin page, where each option has one)."""
    first, last = ("Option", "In short") if anchors else ("Key", "Meaning")
    rows = [f"| {first} | Type | Default | {last} |", "| --- | --- | --- | --- |"]
    for key in keys:
        name = f"[`{key.name}`](#{key.name})" if anchors else f"`{key.name}`"
        doc = key.doc
        shown = [c for c in key.choices if c]
        if shown and not all(f"`{c}`" in doc for c in shown):
            doc += " (" + ", ".join(f"`{c}`" for c in shown) + ")"
        if key.prefixes:
            starts = ", ".join(f"`{p}`" for p in key.prefixes)
            also = "".join(f" or `{literal}`" for literal in key.literals)
            doc += f"; a value starts with {starts}{also}"
        rows.append(f"| {name} | {key.type_text()} | {key.default_text()} | {doc} |")
    return "\n".join(rows)
