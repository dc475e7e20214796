"""A reverse proxy on loopback that publishes an upstream under a path prefix, as nginx
(`location /docs/ { proxy_pass http://runtime/; }`) or Traefik's StripPrefix do.

Only ``PREFIX/...`` is forwarded; anything else is the proxy's own 404 (so a widget that
posts to the host root's /api fails, as it would behind a real proxy). With ``strip`` the
upstream sees the path below the prefix, else the path as it came. Responses stream
(Server-Sent Events arrive as they are written), with the upstream's encoding kept.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
from starlette.types import ASGIApp, Message, Receive, Scope, Send

HOP_BY_HOP = {
    b"connection",
    b"keep-alive",
    b"transfer-encoding",
    b"te",
    b"trailer",
    b"upgrade",
    b"proxy-connection",
}


def prefix_proxy(upstream: str, prefix: str, strip: bool = True) -> ASGIApp:
    """An ASGI app forwarding ``prefix``/... to ``upstream`` (``http://127.0.0.1:port``)."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            message = await receive()
            await send({"type": "lifespan.startup.complete"})
            message = await receive()
            if message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
            return
        path: str = scope["path"]
        if not (path == prefix or path.startswith(prefix + "/")):
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b"not behind the proxy"})
            return
        forwarded = (path[len(prefix) :] or "/") if strip else path
        query = scope.get("query_string", b"").decode()
        url = upstream + forwarded + (f"?{query}" if query else "")
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in HOP_BY_HOP]

        async def body() -> AsyncIterator[bytes]:
            while True:
                message: Message = await receive()
                if message["type"] != "http.request":
                    return
                yield message.get("body", b"")
                if not message.get("more_body"):
                    return

        async with httpx.AsyncClient(timeout=None) as client:
            content = b"".join([chunk async for chunk in body()])  # questions are small
            request = client.build_request(scope["method"], url, headers=headers, content=content)
            response = await client.send(request, stream=True)
            try:
                kept = [
                    (k, v) for k, v in response.headers.raw if k.lower() not in HOP_BY_HOP
                ]
                await send(
                    {"type": "http.response.start", "status": response.status_code, "headers": kept}
                )
                async for chunk in response.aiter_raw():
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                await send({"type": "http.response.body", "body": b""})
            finally:
                await response.aclose()

    return app


__all__ = ["prefix_proxy"]
