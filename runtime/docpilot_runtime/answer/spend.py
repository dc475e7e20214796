"""Model calls within the day's spend: each call holds an estimate of its cost before it
starts and settles what it cost after, so turns running at once cannot pass the cap
together (the runtime's caps keep the holds; `limits.caps`).

The estimate is meant never to fall short: the prompt's tokens counted generously (a
token for every three ASCII characters, one for every other character) and the whole
output budget (`max_tokens`), priced as the provider's model (`providers.pricing`, which
prices an unknown model at the dearest row).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Protocol

from docpilot_runtime.providers import (
    CallOptions,
    DeltaSink,
    Message,
    ModelReply,
    Provider,
    ProviderError,
    ToolSpec,
    Usage,
    cost_micro_usd,
)

DEFAULT_MAX_TOKENS = 1500  # a provider's output budget when it does not say (its default)


class SpendGate(Protocol):
    """Where a call holds its estimate and settles its cost (one per turn)."""

    async def hold(self, micro_usd: int) -> object | None:
        """A hold on ``micro_usd`` of the day's spend; None when the cap refuses it."""
        ...

    async def settle(self, held: object, micro_usd: int) -> None:
        """Release ``held`` and count what the call cost."""
        ...


class SpendCapReached(Exception):
    """The day's spend cannot cover another model call: the turn settles without one."""


def prompt_tokens(system: Sequence[str], messages: Sequence[Message],
                  tools: Sequence[ToolSpec]) -> int:
    """A generous count of a call's input tokens."""
    text = "".join(system) + "".join(str(m.content) for m in messages)
    text += json.dumps([[t.name, t.description, t.parameters] for t in tools], default=str)
    ascii_chars = sum(ch.isascii() for ch in text)
    return ascii_chars // 3 + (len(text) - ascii_chars) + 1


def output_budget(provider: Provider) -> int:
    """The provider's `max_tokens` (through a wrapper such as the app's counter)."""
    inner = getattr(provider, "inner", provider)
    settings = getattr(inner, "settings", None)
    return int(getattr(settings, "max_tokens", DEFAULT_MAX_TOKENS) or DEFAULT_MAX_TOKENS)


async def complete_within(
    gate: SpendGate | None, provider: Provider, system: Sequence[str],
    messages: Sequence[Message], tools: Sequence[ToolSpec], on_delta: DeltaSink | None,
    max_tokens: int | None = None, options: CallOptions | None = None,
) -> ModelReply:
    """``provider.complete`` with its estimate held first and its cost settled after (a
    failed call settles what it reported, else its prompt's estimate). Without a gate, the
    plain call. ``max_tokens`` lowers the call's output budget (the question rewrite's);
    ``options`` are the call's request settings (`providers.CallOptions`).
    Raises SpendCapReached when the hold is refused."""
    if gate is None:
        return await provider.complete(system, messages, tools, on_delta, max_tokens, options)
    prompt = prompt_tokens(system, messages, tools)
    budget = max_tokens or output_budget(provider)
    estimate = cost_micro_usd(provider.model, Usage(prompt, budget))
    held = await gate.hold(estimate)
    if held is None:
        raise SpendCapReached(f"the day's spend cannot hold {estimate} micro-USD more")
    cost = cost_micro_usd(provider.model, Usage(input_tokens=prompt))
    try:
        reply = await provider.complete(system, messages, tools, on_delta, max_tokens, options)
        cost = cost_micro_usd(provider.model, reply.usage)
        return reply
    except ProviderError as exc:
        if exc.usage.input_tokens or exc.usage.output_tokens:
            cost = cost_micro_usd(provider.model, exc.usage)
        raise
    finally:
        # Shielded: a turn cancelled mid-call (its reader left) still settles its hold.
        await asyncio.shield(gate.settle(held, cost))


__all__ = ["SpendCapReached", "SpendGate", "complete_within", "output_budget", "prompt_tokens"]
