"""A credential the check found: its kind, its name for the reader, and where it is."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CredentialMatch:
    """A credential found in a question: what it is, and where (for the browser to highlight)."""

    kind: str  # stable machine label, e.g. "openai_api_key"
    label: str  # human name, e.g. "OpenAI API key"
    start: int
    end: int
