"""DocPilot runtime: indexing a built site, answering questions about it, and serving both.

The public API (the `docpilot` CLI and the MkDocs plugin wrap the same functions)::

    import docpilot_runtime as dp

    settings = dp.load_settings("docpilot.toml")      # or dp.Settings()
    dp.index_built_site("site/", settings.index, settings.widget)
    runtime = dp.load_runtime("site/", settings)
    result = dp.ask(runtime, "How do I exclude a page?")
    report = dp.evaluate_site("site/", "questions.jsonl")  # per-kind figures
    app = dp.create_app("site/", settings)            # a Starlette app

Names are imported on first use (PEP 562), so `import docpilot_runtime` stays cheap, and
the browser wheel (which ships this file) pulls in nothing from it. For typed use,
import from the owning module (`docpilot_runtime.api`, `.settings.load`, `.turn`, `.shared.types`).
Nothing here imports MkDocs; `mkdocs_docpilot` is a thin adapter over this package.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

# public name -> the module that owns it
_EXPORTS = {
    "IndexResult": "api",
    "ask": "api",
    "create_app": "api",
    "evaluate_site": "api",
    "index_built_site": "api",
    "load_runtime": "api",
    "BundleError": "bundle.schema",
    "BuildError": "index.build",
    "EvalError": "evaluate.questions",
    "IndexOptions": "settings.index",
    "OptionsError": "settings.keys",
    "Settings": "settings.load",
    "SettingsError": "settings.load",
    "load_settings": "settings.load",
    "Runtime": "turn",
    "AskRequest": "shared.types",
    "RequestError": "shared.types",
    "Result": "shared.types",
    "WidgetOptions": "settings.widget",
}
__all__ = [
    "AskRequest",
    "BuildError",
    "BundleError",
    "EvalError",
    "IndexOptions",
    "IndexResult",
    "OptionsError",
    "RequestError",
    "Result",
    "Runtime",
    "Settings",
    "SettingsError",
    "WidgetOptions",
    "__version__",
    "ask",
    "create_app",
    "evaluate_site",
    "index_built_site",
    "load_runtime",
    "load_settings",
]

def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'docpilot_runtime' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
