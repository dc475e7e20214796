"""Actions an answer may offer: only those the site declared, with arguments that pass
the declared JSON Schema. ``jsonschema`` is imported when called."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

MAX_ACTIONS = 3


def validate_actions(
    offered: Any, declared: Sequence[Mapping[str, Any]], limit: int = MAX_ACTIONS
) -> list[dict[str, Any]]:
    """The actions the answer offered that the site declared, with arguments that pass
    the declared JSON Schema, without exact duplicates, at most ``limit``, in the order
    offered. Anything malformed is dropped, never raised; the label and url come from the
    declaration, never from the model."""
    from jsonschema import validators

    if not isinstance(offered, list | tuple):
        return []
    declarations: dict[str, Mapping[str, Any]] = {}
    for declaration in declared if isinstance(declared, list | tuple) else ():
        if isinstance(declaration, Mapping) and isinstance(declaration.get("name"), str):
            declarations.setdefault(declaration["name"], declaration)
    kept: list[dict[str, Any]] = []
    seen: set[str] = set()
    for entry in offered:
        if len(kept) >= limit:
            break
        if not isinstance(entry, Mapping):
            continue
        name = entry.get("name")
        declaration = declarations.get(name) if isinstance(name, str) else None
        if declaration is None:
            continue
        arguments = entry.get("arguments", {})
        if isinstance(arguments, str):  # OpenAI-style tools send arguments as JSON text
            try:
                arguments = json.loads(arguments)
            except ValueError:
                continue
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            continue
        try:
            canonical = json.dumps(arguments, sort_keys=True, ensure_ascii=False)
        except (TypeError, ValueError):
            continue
        schema: Any = declaration.get("parameters")
        if schema is None:
            schema = {"type": "object", "maxProperties": 0}
        if not isinstance(schema, Mapping | bool):
            continue
        checked: Any = schema
        try:
            cls = validators.validator_for(checked)
            cls.check_schema(checked)
            if not cls(checked).is_valid(arguments):
                continue
        except Exception:  # a broken declared schema drops the action, never the turn
            continue
        key = json.dumps([name, canonical])
        if key in seen:
            continue
        seen.add(key)
        action: dict[str, Any] = {"name": name, "arguments": json.loads(canonical)}
        for extra in ("label", "url", "description"):
            value = declaration.get(extra)
            if isinstance(value, str) and value:
                action[extra] = value
        kept.append(action)
    return kept
