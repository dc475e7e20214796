"""Whether a question names something the docs never mention: a gate signal.

Real off-topic questions on a docs site are mostly about another product, asked in this
product's words ("Is it possible to set DBeaver to use HostSNI…", "Serving Hass via
Caddy…"): what gives them away is a word written like a name (``followup.name_terms``:
two capitals, a capital past the first word, a digit) that no section of the corpus
uses. On the real sets' tune halves 39 % of the off-topic questions (24 of 61), 17 % of
the near-misses and 15 % of the covered ones (18 of 117) had one
(``benchmarks/bench_gate_choice.py``). Numbered words (versions, ports, error codes) are
left out: "3306" or "v2.1.7" names nothing the docs must know.
Pure Python: the browser's gate reads it too.
"""

from __future__ import annotations

from typing import Protocol

from docpilot_runtime.retrieve.followup import name_terms


class Vocabulary(Protocol):
    def document_frequency(self, term: str) -> int: ...


def unknown_names(index: Vocabulary, question: str) -> list[str]:
    """The question's name-like terms (no digit in them) that no unit uses."""
    return sorted(
        term
        for term in name_terms(question)
        if not any(c.isdigit() for c in term) and index.document_frequency(term) == 0
    )


def names_known(index: Vocabulary, question: str) -> float:
    """1.0 when the docs use every name the question writes, else 0.0."""
    return 0.0 if unknown_names(index, question) else 1.0
