"""The `[headers]` table: the Content-Security-Policy of the site's pages.

``page_policy`` is DocPilot's own strict policy: the API and the widget's files get it
as it is. The site's pages get it widened by what they load from other origins
(`serve.page_sources`) unless ``allow_page_sources`` is off."""

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
    allow_page_sources: bool = True  # widen the pages' policy by what they load

    def page_csp(self, policy: str | None = None) -> str:
        """The page policy (or ``policy``, a widened one) with its ``frame-ancestors``."""
        ancestors = " ".join(self.frame_ancestors) or "'none'"
        base = self.page_policy if policy is None else policy
        return f"{base.rstrip('; ')}; frame-ancestors {ancestors}"
