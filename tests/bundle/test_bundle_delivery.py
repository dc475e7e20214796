"""Bundle delivery for pipelines: a runtime serving its bundle from the published site's
URL (a loopback static host with ETags) swaps to a rebuilt bundle on a signed POST while
a streaming turn is in flight (the turn completes on the old bundle, the next uses the
new one, each record names its bundle), refuses a corrupt bundle and keeps serving, and
finds a newer bundle by polling with If-None-Match."""

from __future__ import annotations

import json
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from docpilot_runtime.bundle.read import parse_bundle
from docpilot_runtime.bundle.schema import BundleError
from docpilot_runtime.records import RecordsSettings, open_store
from docpilot_runtime.serve.app import create_app
from docpilot_runtime.serve.bundle_swap import UsedNonces
from docpilot_runtime.settings.bundle import BundleSettings
from docpilot_runtime.settings.load import Settings
from docpilot_runtime.settings.providers import ProviderSettings
from docpilot_runtime.sites.source import (
    NONCE_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    BundleSource,
    SourceError,
    check_url,
    signature,
    verify_signature,
)
from servers.openai_chat import OpenAIChatServer, Reply, answer_reply
from servers.runtime import NO_CAPS, serve_app
from servers.static_host import StaticHost
from small_site import BUNDLE, CACHE, INSTALL, INSTALL_QUESTION, PROXY, build_small_site

SECRET = "pipeline-secret-for-the-test"
SECRET_ENV = "DOCPILOT_TEST_RELOAD_SECRET"
WAIT = 60.0

@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, bytes]:
    root = tmp_path_factory.mktemp("delivery")
    old = build_small_site(root / "v1", root / "cache", [INSTALL, CACHE])
    new = build_small_site(root / "v2", root / "cache", [INSTALL, CACHE, PROXY])
    return old, new


class HeldChat(OpenAIChatServer):
    """The scripted provider, holding its first reply after the stream opens until
    `release` is set: a turn in flight for as long as the test needs."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.release = threading.Event()

    def reply_events(self, reply: Reply, number: int, body: dict[str, Any]) -> Iterator[str]:
        events = iter(super().reply_events(reply, number, body))
        yield next(events)
        if number == 1:
            self.record_started(number)
            self.release.wait(WAIT)
        yield from events


def signed_reload(base_url: str, secret: str = SECRET, body: bytes = b"{}") -> httpx.Response:
    stamp, nonce = str(int(time.time())), secrets.token_urlsafe(16)
    headers = {TIMESTAMP_HEADER: stamp, NONCE_HEADER: nonce,
               SIGNATURE_HEADER: signature(secret.encode(), stamp, nonce, body),
               "Content-Type": "application/json"}
    return httpx.post(base_url + "/api/bundle/reload", content=body, headers=headers, timeout=WAIT)


def health_hash(base_url: str) -> str:
    value: str = httpx.get(base_url + "/api/health", timeout=WAIT).json()["bundle_hash"]
    return value


def final_event(stream_text: str) -> tuple[str, dict[str, Any]]:
    blocks = [b for b in stream_text.strip().split("\n\n") if b]
    name, data = blocks[-1].split("\n", 1)
    return name.removeprefix("event: "), json.loads(data.removeprefix("data: "))


def settings_for(tmp_path: Path, url: str, model_url: str, **bundle: Any) -> Settings:
    provider = ProviderSettings(kind="openai", base_url=model_url, model="gpt-4o", retries=0)
    return Settings(
        providers=(provider,),
        caps=NO_CAPS,
        records=RecordsSettings(path=str(tmp_path / "records.sqlite3")),
        bundle=BundleSettings(url=url, **bundle),
    )


def test_a_streaming_turn_in_flight_finishes_on_the_old_bundle_and_the_next_uses_the_new(
    bundles: tuple[bytes, bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new = bundles
    old_hash, new_hash = parse_bundle(old, "v1").hash, parse_bundle(new, "v2").hash
    install_id = next(u.id for u in parse_bundle(old, "v1").units if "install" in u.id)
    proxy_id = next(u.id for u in parse_bundle(new, "v2").units if "proxies" in u.id)
    monkeypatch.setenv(SECRET_ENV, SECRET)
    (tmp_path / "site").mkdir()
    steps = [answer_reply(markdown=f"Install it with pip [[{install_id}]]."),
             answer_reply(markdown=f"List the proxy in trusted_proxies [[{proxy_id}]].")]
    with StaticHost() as host, HeldChat(steps) as model:
        host.publish(BUNDLE, old)
        settings = settings_for(tmp_path, host.url(BUNDLE), model.base_url,
                                reload_secret_env=SECRET_ENV)
        with serve_app(create_app(tmp_path / "site", settings)) as running:
            assert health_hash(running.base_url) == old_hash
            streamed: dict[str, str] = {}

            def ask_streaming() -> None:
                with httpx.stream(
                    "POST", running.base_url + "/api/ask",
                    json={"question": INSTALL_QUESTION},
                    headers={"Accept": "text/event-stream"}, timeout=WAIT,
                ) as response:
                    streamed["text"] = response.read().decode("utf-8")

            turn = threading.Thread(target=ask_streaming)
            turn.start()
            assert model.wait_until(lambda s: bool(s.started_streams), WAIT), "turn in flight"

            host.publish(BUNDLE, new)
            swapped = signed_reload(running.base_url)
            assert swapped.status_code == 200, swapped.text
            assert swapped.json()["status"] == "swapped"
            assert swapped.json()["bundles"][0]["bundle_hash"] == new_hash
            assert health_hash(running.base_url) == new_hash
            assert "text" not in streamed, "the first turn is still waiting on its model"

            model.release.set()
            turn.join(WAIT)
            name, first = final_event(streamed["text"])
            assert name == "answer" and first["kind"] == "answer", streamed["text"]
            assert first["bundle_hash"] == old_hash, "the turn kept the bundle it started on"
            assert [c["id"] for c in first["citations"]] == [install_id]

            second = httpx.post(running.base_url + "/api/ask", timeout=WAIT,
                                json={"question": "How do I set up a reverse proxy?"}).json()
            assert second["bundle_hash"] == new_hash
            assert [c["id"] for c in second["citations"]] == [proxy_id], "only v2 has it"

            host.publish(BUNDLE, new[: len(new) // 2])  # a partial upload
            refused = signed_reload(running.base_url)
            assert refused.status_code == 422
            assert "not a msgpack bundle" in refused.json()["error"]
            assert host.url(BUNDLE) in refused.json()["error"], "the message names the bundle"
            assert health_hash(running.base_url) == new_hash, "the old bundle keeps serving"

            assert signed_reload(running.base_url, secret="wrong").status_code == 401
            unsigned = httpx.post(running.base_url + "/api/bundle/reload", content=b"{}")
            assert unsigned.status_code == 401
            assert len(model.requests) == 2, "refusals called no model"

    store = open_store(tmp_path / "records.sqlite3", "")
    try:
        recorded = {t["turn_id"]: t["bundle_hash"] for t in store.turns()}
    finally:
        store.close()
    assert recorded == {first["turn_id"]: old_hash, second["turn_id"]: new_hash}


def test_polling_with_an_etag_finds_the_rebuilt_bundle(
    bundles: tuple[bytes, bytes], tmp_path: Path
) -> None:
    old, new = bundles
    new_hash = parse_bundle(new, "v2").hash
    (tmp_path / "site").mkdir()
    with StaticHost() as host, OpenAIChatServer() as model:
        host.publish(BUNDLE, old)
        settings = settings_for(tmp_path, host.url(BUNDLE), model.base_url, poll_seconds=0.05)
        with serve_app(create_app(tmp_path / "site", settings)) as running:
            assert host.wait_for(lambda: 304 in host.statuses(BUNDLE), WAIT), "polled, unchanged"
            host.publish(BUNDLE, new)
            deadline = time.monotonic() + WAIT
            while health_hash(running.base_url) != new_hash:
                assert time.monotonic() < deadline, "the poller never swapped"
                host.wait_for(lambda: host.statuses(BUNDLE)[-1] == 200, 1.0)
            statuses = host.statuses(BUNDLE)
            assert statuses[0] == 200 and 304 in statuses
            assert statuses.count(200) == 2, "an unchanged bundle is never downloaded again"
            assert not (tmp_path / "site" / "docpilot").exists(), "served from the URL alone"


def test_a_bundle_url_must_be_https_unless_on_loopback() -> None:
    check_url("https://docs.example.com/docpilot/bundle.msgpack", allow_http=False)
    check_url("http://127.0.0.1:8000/docpilot/bundle.msgpack", allow_http=False)
    with pytest.raises(SourceError, match="must be https"):
        check_url("http://docs.example.com/docpilot/bundle.msgpack", allow_http=False)
    check_url("http://docs.internal/docpilot/bundle.msgpack", allow_http=True)


def test_a_manifest_whose_sha256_differs_from_the_bundle_is_refused(
    bundles: tuple[bytes, bytes],
) -> None:
    old, _new = bundles
    manifest = {"format": "docpilot-manifest", "version": 1, "bundles": [
        {"prefix": "/", "language": "en", "version": "", "bundle": BUNDLE, "sha256": "0" * 64}]}
    with StaticHost() as host:
        host.publish(BUNDLE, old)
        host.publish("docpilot/manifest.json", json.dumps(manifest).encode())
        with pytest.raises(BundleError, match="differs from the manifest"):
            BundleSource("unused", BundleSettings(url=host.url())).load()


def test_a_stale_or_forged_signature_is_refused() -> None:
    body = b'{"reason": "rebuilt"}'
    now, nonce, key = 1_800_000_000, "n0nce-for-the-test", SECRET.encode()
    good = signature(key, str(now), nonce, body)
    assert verify_signature(key, str(now), nonce, good, body, now=now + 10) == ""
    assert "more than" in verify_signature(key, str(now), nonce, good, body, now=now + 301)
    assert "does not match" in verify_signature(key, str(now), nonce, good, b"{}", now=now)
    other = "another-nonce-0000"  # the signature covers the nonce too
    assert "does not match" in verify_signature(key, str(now), other, good, body, now=now)
    assert "required" in verify_signature(key, str(now), None, good, body, now=now)
    assert "letters" in verify_signature(key, str(now), "short", good, body, now=now)


def test_a_nonce_is_accepted_once_within_the_window() -> None:
    clock = [0.0]
    used = UsedNonces(window=600, limit=2, clock=lambda: clock[0])
    assert used.use("a" * 16) == ""
    assert "already used" in used.use("a" * 16)
    assert used.use("b" * 16) == ""
    assert "more than 2" in used.use("c" * 16), "bounded"
    clock[0] = 601.0  # both forgotten once their timestamps could no longer pass
    assert used.use("c" * 16) == ""


@pytest.fixture
def reloadable(
    bundles: tuple[bytes, bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    """A runtime serving a folder with reloads on and a short body deadline: its URL."""
    monkeypatch.setenv(SECRET_ENV, SECRET)
    site = tmp_path / "site"
    (site / "docpilot").mkdir(parents=True)
    (site / BUNDLE).write_bytes(bundles[0])
    settings = Settings(caps=replace(NO_CAPS, body_read_seconds=0.5),
                        records=RecordsSettings(enabled=False),
                        bundle=BundleSettings(reload_secret_env=SECRET_ENV))
    with serve_app(create_app(site, settings)) as running:
        yield running.base_url


def test_a_replayed_reload_is_refused(reloadable: str) -> None:
    body = b'{"reason": "published"}'
    first = signed_reload(reloadable, body=body)
    assert first.status_code == 200, first.text
    replayed = httpx.post(reloadable + "/api/bundle/reload", content=body, timeout=WAIT,
                          headers=dict(first.request.headers))
    assert replayed.status_code == 401
    assert "already used" in replayed.json()["error"]["message"]
    assert signed_reload(reloadable, body=body).status_code == 200, "a fresh request is fine"


def test_a_reload_body_that_never_finishes_is_a_408(reloadable: str) -> None:
    url = httpx.URL(reloadable)
    with socket.create_connection((url.host, url.port), timeout=WAIT) as sock:
        sock.sendall(b"POST /api/bundle/reload HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
        reply = b""
        # Head and body may come in two segments; the server closes after a 408.
        while chunk := sock.recv(65536):
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 408"), reply[:80]
    assert b'"field":"body"' in reply
