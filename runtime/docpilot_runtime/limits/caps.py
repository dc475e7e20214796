"""Rate caps and the daily spend bound of the public endpoint, for one process.

`Caps` is the interface the HTTP app talks to; `MemoryCaps` keeps the counts in this
process. Several processes serving one site share them through the records database
with `limits.shared.DatabaseCaps` (`[limits] shared = true`); nothing else changes.

Rates are token buckets: a cap of N answers per minute lets a burst of N through, then
one every 60/N seconds, so "N per minute" holds over any minute-long window. A bucket
idle for a minute is full again, i.e. the same as no bucket, which is why idle clients
can be forgotten and memory stays bounded by the clients of the last minute.

Spend is counted in micro-USD per UTC day. Each model call first holds an estimate of
what it may cost (`hold_spend`: refused once the day's spend plus what other calls hold
has reached the cap), then settles what it did cost (`settle_spend`), so calls running at
once cannot together overrun the cap by more than one call's estimate (the estimate is
made not to fall short). A turn refused a hold settles as `passages` (`spend_cap`).
"""

from __future__ import annotations

import ipaddress
import math
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from docpilot_runtime.settings.limits import LimitSettings, Network

WINDOW_SECONDS = 60.0
# Past this many clients seen within a minute, the least recently seen are forgotten
# (each would start again with a full bucket): a bound on memory under a spread flood.
MAX_TRACKED_CLIENTS = 100_000




# A hold no call has settled (its process died mid-call) stops counting after this long.
HOLD_SECONDS = 900.0


@dataclass(frozen=True)
class SpendHold:
    """An estimate one model call holds against the day's spend until it settles."""

    id: str
    micro_usd: int
    day: str

    @classmethod
    def of(cls, micro_usd: int, day: str) -> SpendHold:
        return cls(uuid.uuid4().hex, max(0, int(micro_usd)), day)


@dataclass(frozen=True)
class Admission:
    """Whether a request may start a turn; when not, how long until it may."""

    allowed: bool
    retry_after: int = 0  # whole seconds, at least 1 when refused
    cap: str = ""  # "client" or "site": the cap that refused


class Caps(Protocol):
    """What the app asks before and after a turn; one implementation per store."""

    async def admit(self, site: str, client: str) -> Admission:
        """Count one answer against the site's and the client's caps, or refuse it."""
        ...

    async def admit_calls(self, client: str, per_minute: int) -> Admission:
        """Count one tool call (MCP) against the client's call cap, or refuse it."""
        ...

    async def spend_exhausted(self) -> bool:
        """Whether today's spend has reached the daily cap (models are then skipped)."""
        ...

    async def record_spend(self, micro_usd: int) -> None:
        """Add a model cost spent outside a hold (a second opinion) to today's spend."""
        ...

    async def hold_spend(self, micro_usd: int) -> SpendHold | None:
        """Hold ``micro_usd`` of today's spend for one model call; None when what is spent
        and held already has reached the daily cap (so the last call let in may pass it by
        its own estimate, and no more)."""
        ...

    async def settle_spend(self, hold: SpendHold, micro_usd: int) -> None:
        """Release ``hold`` and add what the call cost to today's spend."""
        ...


@dataclass
class _Bucket:
    tokens: float
    updated: float


@dataclass
class TokenBuckets:
    """Buckets of ``per_minute`` tokens by key, refilled continuously."""

    per_minute: int
    max_keys: int = MAX_TRACKED_CLIENTS
    _buckets: OrderedDict[str, _Bucket] = field(default_factory=OrderedDict)

    def _refilled(self, key: str, now: float) -> _Bucket:
        bucket = self._buckets.get(key)
        if bucket is None:
            return _Bucket(float(self.per_minute), now)
        rate = self.per_minute / WINDOW_SECONDS
        tokens = min(float(self.per_minute), bucket.tokens + (now - bucket.updated) * rate)
        return _Bucket(tokens, now)

    def wait(self, key: str, now: float) -> float:
        """Seconds until ``key`` has a whole token (0 when it has one now)."""
        if self.per_minute <= 0:
            return 0.0
        bucket = self._refilled(key, now)
        if bucket.tokens >= 1.0:
            return 0.0
        return (1.0 - bucket.tokens) * WINDOW_SECONDS / self.per_minute

    def take(self, key: str, now: float) -> None:
        """Spend one token of ``key`` (call only after `wait` returned 0)."""
        if self.per_minute <= 0:
            return
        bucket = self._refilled(key, now)
        bucket.tokens -= 1.0
        self._buckets[key] = bucket
        self._buckets.move_to_end(key)
        self._forget_idle(now)

    def _forget_idle(self, now: float) -> None:
        # Oldest first: a bucket untouched for a window is full, the same as absent.
        while self._buckets:
            key, oldest = next(iter(self._buckets.items()))
            if now - oldest.updated < WINDOW_SECONDS and len(self._buckets) <= self.max_keys:
                break
            del self._buckets[key]

    def __len__(self) -> int:
        return len(self._buckets)


def utc_day(wall: float) -> str:
    return datetime.fromtimestamp(wall, UTC).date().isoformat()


class MemoryCaps:
    """`Caps` kept in this process's memory (one uvicorn worker)."""

    def __init__(
        self,
        settings: LimitSettings,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.clock = clock  # for rates: never goes backwards
        self.wall = wall  # for the spend day
        self.sites = TokenBuckets(settings.answers_per_minute)
        self.clients = TokenBuckets(settings.answers_per_minute_per_client)
        self.calls: dict[int, TokenBuckets] = {}  # MCP tool calls, by cap size
        self.day = ""
        self.spent = 0
        self.holds: dict[str, tuple[SpendHold, float]] = {}  # id -> (hold, when taken)

    async def admit(self, site: str, client: str) -> Admission:
        now = self.clock()
        # The client's cap is asked first and a refused request takes no token from
        # the site: one flooding client cannot use up everybody's answers.
        waits = {
            "client": self.clients.wait(client, now),
            "site": self.sites.wait(site, now),
        }
        refused = {cap: seconds for cap, seconds in waits.items() if seconds > 0}
        if refused:
            cap = max(refused, key=lambda name: refused[name])
            return Admission(False, max(1, math.ceil(refused[cap])), cap)
        self.clients.take(client, now)
        self.sites.take(site, now)
        return Admission(True)

    async def admit_calls(self, client: str, per_minute: int) -> Admission:
        buckets = self.calls.setdefault(per_minute, TokenBuckets(per_minute))
        now = self.clock()
        seconds = buckets.wait(client, now)
        if seconds > 0:
            return Admission(False, max(1, math.ceil(seconds)), "calls")
        buckets.take(client, now)
        return Admission(True)

    def _today(self) -> None:
        day = utc_day(self.wall())
        if day != self.day:
            self.day, self.spent = day, 0

    async def spend_exhausted(self) -> bool:
        if self.settings.daily_spend_micro_usd <= 0:
            return False
        self._today()
        return self.spent >= self.settings.daily_spend_micro_usd

    async def record_spend(self, micro_usd: int) -> None:
        if micro_usd > 0:
            self._today()
            self.spent += micro_usd

    async def hold_spend(self, micro_usd: int) -> SpendHold | None:
        self._today()
        now = self.clock()
        for key in [k for k, (_, taken) in self.holds.items() if now - taken > HOLD_SECONDS]:
            del self.holds[key]
        hold = SpendHold.of(micro_usd, self.day)
        held = sum(h.micro_usd for h, _ in self.holds.values() if h.day == self.day)
        bound = self.settings.daily_spend_micro_usd
        if bound > 0 and self.spent + held >= bound:
            return None
        self.holds[hold.id] = (hold, now)
        return hold

    async def settle_spend(self, hold: SpendHold, micro_usd: int) -> None:
        self.holds.pop(hold.id, None)
        await self.record_spend(micro_usd)




class TurnSpend:
    """One turn's spend gate over the caps (`answer.spend.SpendGate`): its model calls hold
    and settle there, and it remembers whether a hold was refused (`spend_cap`)."""

    def __init__(self, caps: Caps) -> None:
        self.caps = caps
        self.refused = False

    async def hold(self, micro_usd: int) -> object | None:
        hold = await self.caps.hold_spend(micro_usd)
        self.refused = self.refused or hold is None
        return hold

    async def settle(self, held: object, micro_usd: int) -> None:
        if isinstance(held, SpendHold):
            await self.caps.settle_spend(held, micro_usd)


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        return None


def _trusted(
    address: ipaddress.IPv4Address | ipaddress.IPv6Address | None,
    proxies: Sequence[Network],
) -> bool:
    return address is not None and any(address in network for network in proxies)


def client_address(peer: str, forwarded_for: Sequence[str], proxies: Sequence[Network]) -> str:
    """The address the caps count: the TCP peer, unless the peer is a trusted proxy.

    Then X-Forwarded-For is read from the right (each proxy appends the address it saw)
    and the first hop that is not itself a trusted proxy is the client; anything to its
    left was written by the client and could be anything. A hop that is not an address
    stops the walk at the last trusted hop."""
    current = peer
    if not _trusted(_address(peer), proxies):
        return peer
    hops = [hop for header in forwarded_for for hop in header.split(",") if hop.strip()]
    for hop in reversed(hops):
        address = _address(hop)
        if address is None:
            return current
        current = str(address)
        if not _trusted(address, proxies):
            return current
    return current


__all__ = [
    "HOLD_SECONDS",
    "Admission",
    "Caps",
    "MemoryCaps",
    "SpendHold",
    "TokenBuckets",
    "TurnSpend",
    "client_address",
]
