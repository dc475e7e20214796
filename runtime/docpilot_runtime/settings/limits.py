"""The `[limits]` table: caps on the public endpoint and what results disclose."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

@dataclass(frozen=True)
class LimitSettings:
    """The `[limits]` table: caps on the public endpoint and what results disclose."""

    answers_per_minute: int = 120  # per site (URL prefix); 0 = no cap
    answers_per_minute_per_client: int = 20  # per client address; 0 = no cap
    trusted_proxies: tuple[Network, ...] = ()  # peers whose X-Forwarded-For is believed
    daily_spend_micro_usd: int = 0  # per UTC day, for the whole process; 0 = no cap
    public_usage: bool = False  # results over HTTP carry `usage` (provider, model, cost)
    body_read_seconds: float = 10.0  # a request body must arrive within this time
    max_connections: int = 200  # API requests at once (+ a reserve: open connections)
    max_connections_per_client: int = 32  # open connections from one address; 0 = no cap
    request_head_seconds: float = 10.0  # a request line and headers must arrive within this
    mcp_sessions: int = 100  # open MCP sessions at once, every client together
    mcp_sessions_per_client: int = 8  # open MCP sessions of one client address
    mcp_session_idle_seconds: float = 300.0  # an MCP session idle this long is ended
    shared: bool = False  # caps and spend kept in the records database (caps_shared)


def parse_networks(values: Sequence[str], where: str) -> tuple[Network, ...]:
    """Addresses or CIDR networks (``"10.0.0.0/8"``, ``"::1"``); ValueError names the bad one."""
    networks = []
    for value in values:
        try:
            networks.append(ipaddress.ip_network(value, strict=False))
        except ValueError:
            raise ValueError(f"{where}: {value!r} is not an IP address or network") from None
    return tuple(networks)
