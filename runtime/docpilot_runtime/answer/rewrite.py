"""Before retrieval: a follow-up or a question in another language, made to stand alone.

Seed 003's first step: "and what does that cost?" means nothing to a search by itself,
and "¿cómo excluyo una página?" shares few words with English docs. One short model call
turns such a question into one standalone question in the docs' language. It is used
only as search terms (`Site.retrieve_rewritten`), the gate still decides on what it
finds, and the reader's own words are what is answered and stored. A plain question in
the docs' language costs no call (`Site.rewrite_reason` says which questions qualify).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from docpilot_runtime.answer.prompt import as_data
from docpilot_runtime.answer.spend import SpendCapReached, SpendGate, complete_within
from docpilot_runtime.providers import Message, Provider, ProviderError, Usage
from docpilot_runtime.providers.pricing import cost_micro_usd

log = logging.getLogger("docpilot.answer")

REWRITE_MAX_TOKENS = 64
REWRITE_CHARS = 300  # longest rewrite used
# A follow-up the gate passes on its own words is searched with them: a rewrite costs a
# call (tens of seconds on a CPU model) for a question retrieval already handles.
REWRITE_PASSED_FOLLOWUPS = False

LANGUAGES = {
    "en": "English", "de": "German", "fr": "French", "es": "Spanish", "it": "Italian",
    "pt": "Portuguese", "nl": "Dutch", "sv": "Swedish", "da": "Danish", "no": "Norwegian",
    "nb": "Norwegian", "fi": "Finnish", "pl": "Polish", "cs": "Czech", "ru": "Russian",
    "uk": "Ukrainian", "tr": "Turkish", "ja": "Japanese", "zh": "Chinese", "ko": "Korean",
}

RULES = """\
You turn a reader's question into one standalone search question in {language}.
Use the earlier question only to fill in what the new question leaves out (what "it" or
"that" means). Keep every name, term and number the reader wrote. Do not answer.
Reply with the question only, on one line."""


@dataclass(frozen=True)
class Rewrite:
    """The standalone question ("" when the call gave none) and what the call used."""

    text: str
    usage: dict[str, Any]


def language_name(code: str) -> str:
    """The docs' language as the prompt names it ("English" for ``en``, ``en-GB``)."""
    base = code.lower().replace("_", "-").split("-")[0]
    return LANGUAGES.get(base, "the language of the documentation")


def _clean(text: str) -> str:
    """The rewrite's first non-empty line without quotes or a "Question:" label."""
    for line in text.strip().splitlines():
        line = line.strip().strip("\"'`“”«» ")
        line = re.sub(r"^(?:standalone |search )?question\s*:\s*", "", line, flags=re.I)
        if line:
            return line[:REWRITE_CHARS]
    return ""


async def rewrite_question(
    provider: Provider,
    question: str,
    earlier: Sequence[str],
    docs_language: str,
    deadline: float,
    spend: SpendGate | None = None,
) -> Rewrite | None:
    """One short call that rewrites ``question`` (after the ``earlier`` questions it may
    refer to) as a standalone question in ``docs_language``; None when the call fails or
    the deadline (a loop time) passes first. Its usage is returned for the turn to count."""
    system = [RULES.format(language=language_name(docs_language))]
    parts = [f"<question>Earlier question: {as_data(q)}</question>" for q in earlier[-2:]]
    parts.append(f"<question>\n{as_data(question)}\n</question>")
    messages = [Message(role="user", content="\n\n".join(parts))]
    try:
        async with asyncio.timeout_at(deadline):
            reply = await complete_within(
                spend, provider, system, messages, [], None, REWRITE_MAX_TOKENS
            )
    except SpendCapReached:
        log.warning("question rewrite by %s: the day's spend cap holds no more", provider.name)
        return None
    except TimeoutError:
        log.warning("question rewrite by %s passed its share of the turn deadline", provider.name)
        return None
    except ProviderError as exc:
        log.warning("question rewrite by %s failed: %s", provider.name, exc)
        return Rewrite("", _usage(provider, exc.usage))
    return Rewrite(_clean(reply.text), _usage(provider, reply.usage))


def _usage(provider: Provider, usage: Usage) -> dict[str, Any]:
    cost = cost_micro_usd(provider.model, usage)
    attempt = {
        "provider": provider.kind,
        "model": provider.model,
        "outcome": "rewrite",
        "cause": "",
        "steps": 1,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "cost_micro_usd": cost,
    }
    return {**{k: v for k, v in attempt.items() if k not in ("outcome", "cause")},
            "attempts": [attempt]}
