"""The widget's options: the values of the schema's widget keys, without the installer.

Apart from `widget.py` (which writes tags and files into a built site) so that loading
settings, and so the server's turn, never loads the installer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from docpilot_runtime.settings.tables import WIDGET

_DEFAULTS = WIDGET.defaults()


@dataclass(frozen=True)
class WidgetOptions:
    """The widget's options; defaults are the schema's (`settings_schema.WIDGET`)."""

    widget: bool = _DEFAULTS["widget"]
    # "" = same origin (/api), an absolute http(s) URL of a runtime, or "browser".
    endpoint: str = _DEFAULTS["endpoint"]
    title: str = _DEFAULTS["title"]
    placeholder: str = _DEFAULTS["placeholder"]
    position: str = _DEFAULTS["position"]
    suggested_questions: tuple[str, ...] = _DEFAULTS["suggested_questions"]
    support_url: str = _DEFAULTS["support_url"]
    history: bool = _DEFAULTS["history"]
    require_consent: bool = _DEFAULTS["require_consent"]
    max_question_chars: int = _DEFAULTS["max_question_chars"]  # as the runtime's [server] one
    language: str = _DEFAULTS["language"]  # "" = the theme's language, else English
    strings: Mapping[str, str] = field(default_factory=dict)
    pyodide_url: str = _DEFAULTS["pyodide_url"]
    search_handoff: bool = _DEFAULTS["search_handoff"]
    ask_about_page: bool = _DEFAULTS["ask_about_page"]
    copy_page: bool = _DEFAULTS["copy_page"]
    ai_notice: bool = _DEFAULTS["ai_notice"]

    @property
    def static_mode(self) -> bool:
        return self.endpoint == "browser"


WIDGET_KEYS = frozenset(WIDGET.names())


def widget_options(values: Mapping[str, Any], where: str) -> WidgetOptions:
    """Check the widget's keys (a plugin config or a settings file's [index] table)."""
    checked = WIDGET.check(values, where)
    if "endpoint" in checked:
        checked["endpoint"] = checked["endpoint"].strip()
    return WidgetOptions(**checked)
