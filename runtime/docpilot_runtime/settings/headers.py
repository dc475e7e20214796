"""The `[headers]` table: the Content-Security-Policy of the site's pages."""

from __future__ import annotations

from dataclasses import dataclass

PAGE_POLICY = (
    "default-src 'self'; "
    "script-src 'self' 'unsafe-inline' 'wasm-unsafe-eval'; "
    "style-src 'self' 'unsafe-inline' https://fonts.googleapis.com; "
    "font-src 'self' data: https://fonts.gstatic.com; "
    "img-src 'self' data:; "
    "connect-src 'self'; "
    "worker-src 'self'; "
    "object-src 'none'; "
    "base-uri 'self'; "
    "form-action 'self'"
)


@dataclass(frozen=True)
class HeaderSettings:
    """The `[headers]` table."""

    page_policy: str = PAGE_POLICY  # without frame-ancestors: that comes from below
    frame_ancestors: tuple[str, ...] = ("'self'",)

    def page_csp(self) -> str:
        """The page policy with its ``frame-ancestors`` directive."""
        ancestors = " ".join(self.frame_ancestors) or "'none'"
        return f"{self.page_policy.rstrip('; ')}; frame-ancestors {ancestors}"
