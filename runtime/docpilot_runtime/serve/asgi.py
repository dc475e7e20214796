"""The app for a process manager that imports it by name in every worker process:

    DOCPILOT_SITE_DIR=site/ DOCPILOT_CONFIG=docpilot.toml \\
        uvicorn --factory docpilot_runtime.serve.asgi:app_from_env --workers 4

Each worker loads the bundles itself. With several workers, set `[limits] shared = true`
so they count against one cap (`docpilot serve --workers N` sets it through
``DOCPILOT_SHARED_CAPS``), and, for `/metrics`, ``PROMETHEUS_MULTIPROC_DIR`` to an empty
folder made for this start, so every scrape sums all workers (`docpilot serve --workers N`
makes one and removes it at exit).
"""

from __future__ import annotations

import os
from dataclasses import replace

from starlette.applications import Starlette

from docpilot_runtime.serve.app import create_app
from docpilot_runtime.settings.load import load_settings

SITE_ENV = "DOCPILOT_SITE_DIR"
SHARED_CAPS_ENV = "DOCPILOT_SHARED_CAPS"
ROOT_PATH_ENV = "DOCPILOT_ROOT_PATH"  # the site's URL prefix behind a proxy, as --root-path


def app_from_env() -> Starlette:
    """`create_app` for ``$DOCPILOT_SITE_DIR`` with the settings of ``$DOCPILOT_CONFIG``."""
    site = os.environ.get(SITE_ENV, "")
    if not site:
        raise RuntimeError(f"{SITE_ENV} must name the built site folder")
    settings = load_settings()
    if os.environ.get(SHARED_CAPS_ENV) == "1":
        settings = replace(settings, caps=replace(settings.caps, shared=True))
    from docpilot_runtime.serve.server import freeze_loaded, guard_logs

    guard_logs()
    app = create_app(site, settings, os.environ.get(ROOT_PATH_ENV, ""))
    freeze_loaded()
    return app
