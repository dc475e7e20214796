"""Operator metrics in the Prometheus text format, at `GET /metrics` when `[metrics]`
enables it (behind a bearer token when `token_env` names one).

Counted: turns by kind, stage latencies as histograms, provider errors by provider and
kind, cap hits by cap. Read at scrape time: the records spool's depth and the webhook
outbox's. Labels are fixed vocabularies and provider names, never text a reader typed.

One process (prometheus_client's default): one registry per app, so several apps in one
process never mix. Several worker processes (`docpilot serve --workers N`, or a process
manager with ``PROMETHEUS_MULTIPROC_DIR`` set before the workers start): prometheus_client's
multiprocess mode, where every worker writes its counts to its own file in that folder and
whichever worker a scrape reaches sums all the files, so counters are the total across
workers on every scrape, and keep the counts of a worker that died. The queue depths are
not counted in files: the worker that answers the scrape reads them from the spool folder
and the database all workers share, so they are one value, not a sum. `serve` gives every
start a fresh folder (stale counts of an earlier run never add in) and removes it at exit.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Callable, Iterable, Mapping, Sequence

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest, values
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from docpilot_runtime.providers import (
    CallOptions,
    DeltaSink,
    Message,
    ModelReply,
    Provider,
    ProviderError,
    ToolSpec,
)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"  # prometheus_client's; read when it is imported
# Seconds: a gate decision takes milliseconds, a streamed answer tens of seconds.
STAGE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)




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


def multiprocess_dir(environ: Mapping[str, str] = os.environ) -> str:
    """The folder of multiprocess mode, or "" in one process. Both the variable and
    prometheus_client's file-backed values must be on: the value class is chosen once,
    when prometheus_client is imported, so a variable set later changes nothing."""
    if not getattr(values.ValueClass, "_multiprocess", False):
        return ""
    return environ.get(MULTIPROC_ENV, "")


class RuntimeMetrics:
    """The counters and histograms of one app (in multiprocess mode, of its process)."""

    def __init__(self) -> None:
        self.multiprocess_dir = multiprocess_dir()
        if self.multiprocess_dir and not os.path.isdir(self.multiprocess_dir):
            # Else every counted turn would fail on the missing file, not just the scrape.
            raise ValueError(f"{MULTIPROC_ENV}: {self.multiprocess_dir} is not a folder")
        self._depths: _Depths | None = None
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
        self._depths = _Depths(depths)
        self.registry.register(self._depths)

    def exposition(self) -> bytes:
        if not self.multiprocess_dir:
            return generate_latest(self.registry)
        # Every worker's files, summed, plus the depths this worker reads now.
        merged = CollectorRegistry()
        MultiProcessCollector(merged, self.multiprocess_dir)  # type: ignore[no-untyped-call]
        if self._depths is not None:
            merged.register(self._depths)
        return generate_latest(merged)


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
        self.settings = inner.settings
        self._metrics = metrics

    async def complete(
        self,
        system: Sequence[str],
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        on_delta: DeltaSink | None = None,
        max_tokens: int | None = None,
        options: CallOptions | None = None,
    ) -> ModelReply:
        try:
            return await self.inner.complete(
                system, messages, tools, on_delta, max_tokens, options
            )
        except ProviderError as exc:
            self._metrics.provider_errors.labels(provider=self.name, kind=exc.kind).inc()
            raise

    async def aclose(self) -> None:
        await self.inner.aclose()
