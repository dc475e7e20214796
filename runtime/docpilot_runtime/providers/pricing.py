"""What a model call cost, in micro-USD, from a table of published per-token prices.

The table lists USD per million tokens (input, output, cache read, cache write) for the
models reachable through the two APIs we speak: Anthropic Messages and OpenAI Chat
Completions. Compiled 2026-11-30 from Anthropic's pricing page and model overview pages
(platform.claude.com/docs/en/about-claude/pricing, .../models/*/overview) and OpenAI's
pricing page (platform.openai.com/docs/pricing) as recorded in pydantic/genai-prices
(prices/providers/openai.yml, checked by them through 2026-08). Prices change: re-check
these pages before trusting a bill to this table.

Rules the table follows:
- Standard (not batch, not priority) rates; cache writes are Anthropic's 5-minute writes,
  which is the only TTL we request, at 1.25x input. OpenAI charges no premium to write its
  cache (and does not report writes), so its rows price writes at the input rate.
- OpenAI's "-pro" models answer only on the Responses API, which we do not speak, so they
  are not rows (an OpenAI-compatible router serving one is priced as an unknown model).
- A model not in the table is priced at whichever row would charge the most for the same
  usage, so spend is never under-reported. A local model (Ollama, llama.cpp) therefore
  shows a cost it does not have; that is the price of never reporting less than was spent.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal

from docpilot_runtime.providers.messages import Usage

ANTHROPIC_CACHE_WRITE_FACTOR = Decimal("1.25")


@dataclass(frozen=True)
class Price:
    """USD per million tokens; equivalently micro-USD per token."""

    input: Decimal
    output: Decimal
    cache_read: Decimal
    cache_write: Decimal


@dataclass(frozen=True)
class PriceRow:
    """One model (and its aliases); a dated snapshot of a listed name matches it too.

    `long_prompt` replaces `base` for a call whose prompt (input + cache read + cache
    write) is over `long_prompt_over` tokens, for the models billed that way.
    """

    names: tuple[str, ...]
    base: Price
    long_prompt: Price | None = None
    long_prompt_over: int = 0

    def price_for(self, usage: Usage) -> Price:
        if self.long_prompt is not None and usage.prompt_tokens > self.long_prompt_over:
            return self.long_prompt
        return self.base


def _anthropic(*names: str, input: str, output: str, cache_read: str) -> PriceRow:
    # OpenRouter spells Claude versions with a dot ("claude-opus-4.5"); both match.
    aliases = tuple(dict.fromkeys(n for name in names for n in (name, _dotted(name))))
    return PriceRow(aliases, _anthropic_price(input, output, cache_read))


def _anthropic_price(input: str, output: str, cache_read: str) -> Price:
    rate = Decimal(input)
    return Price(rate, Decimal(output), Decimal(cache_read), rate * ANTHROPIC_CACHE_WRITE_FACTOR)


def _dotted(name: str) -> str:
    return re.sub(r"-(\d)-(\d)$", r"-\1.\2", name)


def _openai(*names: str, input: str, output: str, cache_read: str) -> PriceRow:
    return PriceRow(
        names, Price(Decimal(input), Decimal(output), Decimal(cache_read), Decimal(input))
    )


PRICES: tuple[PriceRow, ...] = (
    # --- Anthropic: Claude Fable / Mythos / Opus / Sonnet / Haiku ---------------------------
    _anthropic("claude-fable-5-1", "claude-mythos-5-1", input="10", output="50", cache_read="0.25"),
    _anthropic("claude-fable-5", "claude-mythos-5", input="10", output="50", cache_read="1"),
    _anthropic("claude-opus-5-5", input="4", output="20", cache_read="0.20"),
    _anthropic(
        "claude-opus-5",
        "claude-opus-4-8",
        "claude-opus-4-7",
        "claude-opus-4-6",
        "claude-opus-4-5",
        input="5",
        output="25",
        cache_read="0.50",
    ),
    # Retired on Anthropic's own API (still on some clouds); kept so an old config is never
    # priced below what it cost.
    _anthropic(
        "claude-opus-4-1",
        "claude-opus-4-0",
        "claude-opus-4",
        input="15",
        output="75",
        cache_read="1.50",
    ),
    _anthropic("claude-sonnet-5-5", input="2", output="10", cache_read="0.10"),  # from 2026-10-07
    _anthropic("claude-sonnet-5", input="2", output="10", cache_read="0.20"),
    _anthropic(
        "claude-sonnet-4-6",
        "claude-sonnet-4-5",
        "claude-sonnet-4-0",
        "claude-sonnet-4",
        input="3",
        output="15",
        cache_read="0.30",
    ),
    PriceRow(
        ("claude-haiku-5-5", "claude-haiku-5.5"),
        _anthropic_price("0.10", "0.50", "0.01"),
        long_prompt=_anthropic_price("0.50", "2.50", "0.05"),
        long_prompt_over=100_000,
    ),
    _anthropic("claude-haiku-4-5", input="1", output="5", cache_read="0.10"),
    # --- OpenAI: GPT-5.x, GPT-4.1, GPT-4o, o-series ------------------------------------------
    _openai("gpt-5.5", "gpt-5.5-chat", input="5", output="30", cache_read="0.50"),
    PriceRow(
        ("gpt-5.4",),
        Price(Decimal("2.50"), Decimal("15"), Decimal("0.25"), Decimal("2.50")),
        long_prompt=Price(Decimal("5"), Decimal("22.50"), Decimal("0.50"), Decimal("5")),
        long_prompt_over=272_000,
    ),
    _openai("gpt-5.4-mini", input="0.75", output="4.50", cache_read="0.075"),
    _openai("gpt-5.4-nano", input="0.20", output="1.25", cache_read="0.02"),
    _openai("gpt-5.3", "gpt-5.3-chat", input="1.75", output="14", cache_read="0.175"),
    _openai("gpt-5.2", "gpt-5.2-chat", input="1.75", output="14", cache_read="0.175"),
    _openai("gpt-5.1", "gpt-5.1-chat", input="1.25", output="10", cache_read="0.125"),
    _openai("gpt-5", "gpt-5-chat", input="1.25", output="10", cache_read="0.125"),
    _openai("gpt-5-mini", input="0.25", output="2", cache_read="0.025"),
    _openai("gpt-5-nano", input="0.05", output="0.40", cache_read="0.005"),
    _openai("gpt-4.1", input="2", output="8", cache_read="0.50"),
    _openai("gpt-4.1-mini", input="0.40", output="1.60", cache_read="0.10"),
    _openai("gpt-4.1-nano", input="0.10", output="0.40", cache_read="0.025"),
    _openai("gpt-4o", input="2.50", output="10", cache_read="1.25"),
    _openai("gpt-4o-2024-05-13", input="5", output="15", cache_read="5"),  # no cache discount
    _openai("gpt-4o-mini", input="0.15", output="0.60", cache_read="0.075"),
    _openai("o1", "o1-preview", input="15", output="60", cache_read="7.50"),
    _openai("o1-mini", input="1.10", output="4.40", cache_read="0.55"),
    _openai("o3", input="2", output="8", cache_read="0.50"),
    _openai("o3-mini", input="1.10", output="4.40", cache_read="0.55"),
    _openai("o4-mini", input="1.10", output="4.40", cache_read="0.275"),
)

# What may follow a listed name and still be that model: dated snapshots and "latest"
# aliases ("claude-sonnet-4-20250514", "gpt-4o-2024-08-06", "claude-3-5-haiku-latest"),
# context or routing tags ("claude-opus-5-5[1m]", "gpt-4o:extended", "...@20250514").
# A variant word ("-pro", "-mini", "-codex") is a different model and must be its own row.
_SNAPSHOT_SUFFIX = re.compile(
    r"(-\d{4}-\d{2}-\d{2}|-\d{8}|-\d{4}|-latest|@[\w.-]+|\[\w+\]|:[\w.-]+)*"
)


def price_row(model: str) -> PriceRow | None:
    """The row pricing `model`: its own name or a snapshot of it, longest name first.

    A router's vendor prefix ("openai/gpt-4o", "anthropic/claude-sonnet-4.5") is ignored:
    OpenRouter passes the vendor's prices through.
    """
    name = model.strip().lower().rsplit("/", 1)[-1]
    best: tuple[int, PriceRow] | None = None
    for row in PRICES:
        for listed in row.names:
            matches = name.startswith(listed) and _SNAPSHOT_SUFFIX.fullmatch(name[len(listed) :])
            if matches and (best is None or len(listed) > best[0]):
                best = (len(listed), row)
    return best[1] if best else None


def row_cost_micro_usd(row: PriceRow, usage: Usage) -> int:
    """`usage` priced at `row`, rounded up to a whole micro-USD."""
    price = row.price_for(usage)
    micro = (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_tokens * price.cache_read
        + usage.cache_write_tokens * price.cache_write
    )
    return math.ceil(micro)


def cost_micro_usd(model: str, usage: Usage) -> int:
    """What one call of `model` with `usage` cost, in micro-USD (never under-reported).

    Price per call, not per turn: the long-prompt tiers depend on one call's prompt length.
    A model not in the table is priced at the row that would charge the most for `usage`.
    """
    row = price_row(model)
    if row is not None:
        return row_cost_micro_usd(row, usage)
    return max(row_cost_micro_usd(candidate, usage) for candidate in PRICES)
