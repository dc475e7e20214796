"""DocPilot's static-mode API on Cloudflare's Python Workers (Pyodide at the edge).

The Worker answers ``POST /api/ask`` and ``GET /api/health`` with the same turn core the
widget runs in the reader's browser (``docpilot_runtime.browser.worker``): the credential check,
social openers, retrieval and the refusal gate, and cited passages, with no model. Every
other path is the built site, served from the Worker's static assets. The index is the
site's own ``docpilot/static.json``, read once per isolate from those assets.

``prepare.sh`` copies the browser core out of the built site's wheel next to this file.
"""

from __future__ import annotations

import json
from typing import Any

from docpilot_runtime.browser import worker as browser
from docpilot_runtime.shared.types import Limits
from js import URL, Object, Response
from pyodide.ffi import to_js

API_HEADERS = {
    "Content-Type": "application/json; charset=utf-8",
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
}
_loaded_prefix: str | None = None


def _reply(status: int, body: dict[str, Any]) -> Any:
    init = to_js({"status": status, "headers": API_HEADERS}, dict_converter=Object.fromEntries)
    return Response.new(json.dumps(body, ensure_ascii=False), init)


async def _load_index(request: Any, env: Any, prefix: str) -> None:
    """Decode ``docpilot/static.json`` from the assets once; later requests reuse it."""
    global _loaded_prefix
    if _loaded_prefix == prefix:
        return
    url = URL.new(f"{prefix}docpilot/static.json", request.url).toString()
    found = await env.ASSETS.fetch(url)
    if not found.ok:
        raise LookupError(f"{url}: the assets answered {found.status}; deploy the built site")
    browser.load_static(await found.text(), prefix=prefix)
    _loaded_prefix = prefix


async def on_fetch(request: Any, env: Any) -> Any:
    """The Worker's entry point: the API under ``{prefix}api/``, the site everywhere else."""
    prefix = str(getattr(env, "DOCPILOT_PREFIX", None) or "/")
    path = URL.new(request.url).pathname
    if not path.startswith(f"{prefix}api/"):
        return await env.ASSETS.fetch(request)
    route = path.removeprefix(f"{prefix}api/")
    if route == "health" and request.method == "GET":
        await _load_index(request, env, prefix)
        return _reply(200, {"status": "ok", "mode": "static", "runtime": "python-worker"})
    if route != "ask":
        return _reply(404, {"error": {"field": "path", "message": f"no API route {path}"}})
    if request.method != "POST":
        return _reply(405, {"error": {"field": "method", "message": "use POST"}})
    body = await request.text()
    limit = Limits().max_body_bytes
    if len(body.encode("utf-8")) > limit:
        error = {"field": "body", "message": f"is over {limit} bytes", "limit": limit}
        return _reply(413, {"error": error})
    await _load_index(request, env, prefix)
    result = json.loads(browser.ask_static(body))
    return _reply(400 if "error" in result else 200, result)
