"""Operator metrics in the Prometheus text format, at `GET /metrics` when `[metrics]`
enables it (behind a bearer token when `token_env` names one).

Counted in this process (prometheus_client, one registry per app so several apps in one
process never mix): turns by kind, stage latencies as histograms, provider errors by
provider and kind, cap hits by cap. Read at scrape time: the records spool's depth and
the webhook outbox's. Labels are fixed vocabularies and provider names, never text a
reader typed.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from .providers import DeltaSink, Message, ModelReply, Provider, ProviderError, ToolSpec
from .settings_schema import METRICS

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_DEFAULTS = METRICS.defaults()
# Seconds: a gate decision takes milliseconds, a streamed answer tens of seconds.
STAGE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


@dataclass(frozen=True)
class MetricsSettings:
    """The `[metrics]` table; the token is read from ``token_env`` when the app starts."""

    enabled: bool = _DEFAULTS["enabled"]
    token_env: str = _DEFAULTS["token_env"]

    def token(self, environ: Mapping[str, str] = os.environ) -> str:
        """The bearer token `/metrics` wants ("" for none); a named but unset variable is
        an error naming it, so the endpoint is never open by accident."""
        if not self.token_env:
            return ""
        value = environ.get(self.token_env, "")
        if not value:
            raise ValueError(
                f"[metrics] token_env: the environment variable {self.token_env} is not set "
                "or empty"
            )
        return value


class _Depths(Collector):
    """Gauges read when scraped: how much waits in the spool and in the outbox."""

    def __init__(self, depths: Callable[[], Mapping[str, int | None]]) -> None:
        self._depths = depths

    def collect(self) -> Iterable[Metric]:
        gauge = GaugeMetricFamily(
            "docpilot_queue_depth", "entries waiting, by queue (spool, outbox)", labels=["queue"]
        )
        for queue, depth in self._depths().items():
            if depth is not None:
                gauge.add_metric([queue], depth)
        yield gauge


class RuntimeMetrics:
    """The counters and histograms of one app."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.turns = Counter(
            "docpilot_turns", "turns answered, by result kind", ["kind"], registry=self.registry
        )
        self.stage_seconds = Histogram(
            "docpilot_stage_seconds",
            "seconds per turn stage (retrieval, answer, first_delta, total)",
            ["stage"],
            buckets=STAGE_BUCKETS,
            registry=self.registry,
        )
        self.provider_errors = Counter(
            "docpilot_provider_errors",
            "failed provider calls, by provider and error kind",
            ["provider", "kind"],
            registry=self.registry,
        )
        self.cap_hits = Counter(
            "docpilot_cap_hits",
            "questions refused or settled by a cap (site, client, spend)",
            ["cap"],
            registry=self.registry,
        )

    def observe_turn(self, kind: str, latency_ms: Mapping[str, float]) -> None:
        self.turns.labels(kind=kind).inc()
        for stage, ms in latency_ms.items():
            self.stage_seconds.labels(stage=stage).observe(ms / 1000)

    def cap_hit(self, cap: str) -> None:
        self.cap_hits.labels(cap=cap).inc()

    def watch_queues(self, depths: Callable[[], Mapping[str, int | None]]) -> None:
        self.registry.register(_Depths(depths))

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


def authorized(header: str, token: str) -> bool:
    """Whether an Authorization header carries the bearer token (compared in constant time)."""
    if not token:
        return True
    scheme, _, value = header.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(value.strip(), token)


class CountedProvider:
    """A provider whose failed calls are counted; everything else passes through."""

    def __init__(self, inner: Provider, metrics: RuntimeMetrics) -> None:
        self.inner = inner
        self.kind = inner.kind
        self.model = inner.model
        self.name = inner.name
        self._metrics = metrics

    async def complete(
        self,
        system: Sequence[str],
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        on_delta: DeltaSink | None = None,
        max_tokens: int | None = None,
    ) -> ModelReply:
        try:
            return await self.inner.complete(system, messages, tools, on_delta, max_tokens)
        except ProviderError as exc:
            self._metrics.provider_errors.labels(provider=self.name, kind=exc.kind).inc()
            raise

    async def aclose(self) -> None:
        await self.inner.aclose()
