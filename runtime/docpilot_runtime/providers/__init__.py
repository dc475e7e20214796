"""Model providers behind one small protocol: Anthropic Messages, OpenAI-compatible chat.

The turn calls ``provider.complete(system, messages, tools, on_delta)`` once per step with
a stable system prefix, a growing message list and the tool specs, and reads the answer
as it streams. Providers are configured as an ordered ``[[providers]]`` list in the
runtime settings file (checked by ``provider_settings``); keys come only from the
environment variables those entries name. Costs come from ``pricing.cost_micro_usd``.
"""

from __future__ import annotations

import httpx

from docpilot_runtime.providers.anthropic import AnthropicProvider
from docpilot_runtime.providers.messages import (
    CallOptions,
    Message,
    ModelReply,
    ToolCall,
    ToolSpec,
    Usage,
)
from docpilot_runtime.providers.openai import OpenAIChatProvider
from docpilot_runtime.providers.pricing import cost_micro_usd
from docpilot_runtime.providers.protocol import DeltaSink, Provider, ProviderError
from docpilot_runtime.settings.providers import PROVIDER_KINDS, ProviderSettings, provider_settings

__all__ = [
    "PROVIDER_KINDS",
    "AnthropicProvider",
    "CallOptions",
    "DeltaSink",
    "Message",
    "ModelReply",
    "OpenAIChatProvider",
    "Provider",
    "ProviderError",
    "ProviderSettings",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "cost_micro_usd",
    "make_provider",
    "provider_settings",
]


def make_provider(settings: ProviderSettings, client: httpx.AsyncClient | None = None) -> Provider:
    """The provider `settings` describe; its key is read from the environment now.

    A missing key variable raises ProviderError naming the variable (never a key). Pass
    `client` to share a connection pool; otherwise close the provider with ``aclose()``.
    """
    if settings.kind == "anthropic":
        return AnthropicProvider(settings, client)
    if settings.kind == "openai":
        return OpenAIChatProvider(settings, client)
    raise ValueError(f"unknown provider kind {settings.kind!r} (known: {list(PROVIDER_KINDS)})")
