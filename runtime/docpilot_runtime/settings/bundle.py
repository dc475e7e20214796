"""The `[bundle]` table: where the runtime's bundles come from and how they are fetched."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

from docpilot_runtime.settings.tables import BUNDLE

_DEFAULTS = BUNDLE.defaults()

@dataclass(frozen=True)
class BundleSettings:
    """The `[bundle]` table."""

    url: str = _DEFAULTS["url"]
    poll_seconds: float = _DEFAULTS["poll_seconds"]
    watch_seconds: float = _DEFAULTS["watch_seconds"]
    reload_secret_env: str = _DEFAULTS["reload_secret_env"]
    allow_http: bool = _DEFAULTS["allow_http"]
    max_bytes: int = _DEFAULTS["max_bytes"]
    timeout: float = _DEFAULTS["timeout"]


def is_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def url_refusal(url: str, allow_http: bool) -> str | None:
    """Why ``url`` may not be fetched ("" scheme rules: https, or http on a loopback host
    or with ``allow_http``), or None when it may."""
    scheme = urlsplit(url).scheme.lower()
    if scheme == "https" or (scheme == "http" and (allow_http or is_loopback(url))):
        return None
    return (
        f"[bundle] url {url!r}: must be https (http only on a loopback host, or with "
        "allow_http = true)"
    )
