"""The runtime under load and faults, on loopback, bounded in count and time, with the
caps raised (and shared through the database, so they are exercised too):

- 1,000 turns from 200 concurrent streaming readers against a slow scripted provider: no
  errors, every turn answered, and every turn's record in the database (none lost);
- the database unavailable for a while (PostgreSQL behind a proxy that cuts every
  connection; SQLite locked by another writer), then back: readers are answered all
  along, and the records spooled meanwhile are written once it returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from docpilot_runtime.records import RecordsSettings, open_store
from docpilot_runtime.serve.app import create_app
from docpilot_runtime.settings.limits import LimitSettings
from docpilot_runtime.settings.load import Settings
from docpilot_runtime.settings.providers import ProviderSettings
from load_driver import SlowChat, run_load
from records_backends import BACKENDS, database_url
from servers.openai_chat import answer_reply
from servers.runtime import serve_app
from small_site import CACHE, INSTALL, INSTALL_QUESTION, INSTALL_UNIT, PROXY, build_small_site

TURNS = 1000
READERS = 200
WAIT = 120.0
# Every reader comes from 127.0.0.1 here: the per-client connection cap is off. Readers
# reuse their connection; 200 of them sharing this process's interpreter with the server
# may take over 10 s to send the next request on a loaded machine, and a connection the
# server closes for idling as the request goes out fails it: an idle time of 60 s.
RAISED = LimitSettings(
    answers_per_minute=1_000_000, answers_per_minute_per_client=1_000_000,
    max_connections=READERS * 2, max_connections_per_client=0, shared=True,
    request_head_seconds=60,
)


@pytest.fixture(scope="module")
def small_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("load")
    build_small_site(root / "site", root / "cache", [INSTALL, CACHE, PROXY])
    return root / "site"


def load_settings(tmp_path: Path, model: SlowChat) -> Settings:
    # Generous timeouts: 200 turns at once on a shared 2-core machine are slow, not broken.
    provider = ProviderSettings(kind="openai", base_url=model.base_url, model="gpt-4o-mini",
                                retries=0, connect_timeout=60.0, first_token_timeout=120.0,
                                idle_timeout=120.0, timeout=120.0)
    return Settings(providers=(provider,), caps=RAISED,
                    records=RecordsSettings(path=str(tmp_path / "records.sqlite3")))


def stored_turns(tmp_path: Path, url: str) -> set[str]:
    store = open_store(tmp_path / "records.sqlite3", url)
    try:
        return {t["turn_id"] for t in store.turns()}
    finally:
        store.close()


def answers(count: int) -> list[object]:
    return [answer_reply(markdown=f"Install it with pip [[{INSTALL_UNIT}]].")] * count


def use_database(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """PostgreSQL at ``url`` for the runtime (DOCPILOT_DATABASE_URL), or "" for SQLite."""
    if url:
        monkeypatch.setenv("DOCPILOT_DATABASE_URL", url)
    else:
        monkeypatch.delenv("DOCPILOT_DATABASE_URL", raising=False)


@pytest.mark.parametrize("backend", BACKENDS)
def test_1000_turns_from_200_streaming_readers_all_answer_and_none_loses_its_record(
    small_site: Path, tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with database_url(backend, tmp_path) as url, SlowChat(answers(TURNS), delay=0.2) as model:
        use_database(url, monkeypatch)
        settings = load_settings(tmp_path, model)
        with serve_app(create_app(small_site, settings), settings=settings) as running:
            outcomes = asyncio.run(run_load(running.base_url, TURNS, READERS, INSTALL_QUESTION))
        # Leaving the block ran the app's shutdown: the recorder's last drain.
        stored = stored_turns(tmp_path, url)
    errors = [o.error for o in outcomes if not o.ok]
    assert errors == [], errors[:5]
    assert len(outcomes) == TURNS and {o.kind for o in outcomes} == {"answer"}
    assert len(model.requests) == TURNS
    turn_ids = {o.turn_id for o in outcomes}
    assert len(turn_ids) == TURNS
    assert stored == turn_ids, "no record lost, none invented"


# ---------------------------------------------------------------- the database away


class CuttableProxy:
    """A TCP forwarder to PostgreSQL on loopback; `cut` drops every connection and then
    closes new ones at once (the database unreachable), `restore` forwards again."""

    def __init__(self, target_port: int) -> None:
        self.target = ("127.0.0.1", target_port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.down = threading.Event()
        self.open: set[socket.socket] = set()
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.down.is_set():
                client.close()
                continue
            upstream = socket.create_connection(self.target)
            with self.lock:
                self.open.update({client, upstream})
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                with self.lock:
                    self.open.discard(end)
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)
                end.close()

    def cut(self) -> None:
        self.down.set()
        with self.lock:
            ends = list(self.open)
        for end in ends:
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)

    def restore(self) -> None:
        self.down.clear()

    def close(self) -> None:
        self.cut()
        self.listener.close()
        self.thread.join(10)


def wait_until(condition: object, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"{what} did not happen within {WAIT} s"
        time.sleep(0.1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_database_away_for_a_while_then_back_loses_no_record(
    small_site: Path, tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with database_url(backend, tmp_path) as url, SlowChat(answers(40), delay=0.05) as model:
        proxy = None
        served_url = url
        if url:  # the runtime reaches PostgreSQL only through the proxy
            base, _, name = url.rpartition("/")
            port = int(base.rsplit(":", 1)[1])
            proxy = CuttableProxy(port)
            served_url = f"{base.rsplit(':', 1)[0]}:{proxy.port}/{name}"
        use_database(served_url, monkeypatch)
        settings = load_settings(tmp_path, model)
        try:
            with serve_app(create_app(small_site, settings), settings=settings) as running:
                before = asyncio.run(run_load(running.base_url, 5, 5, INSTALL_QUESTION))
                first = {o.turn_id for o in before}
                wait_until(lambda: first <= stored_turns(tmp_path, url), "the first writes")

                lock = None
                if proxy is not None:
                    proxy.cut()
                else:  # another writer holds the database
                    lock = sqlite3.connect(tmp_path / "records.sqlite3", isolation_level=None)
                    lock.execute("BEGIN EXCLUSIVE")
                during = asyncio.run(run_load(running.base_url, 20, 5, INSTALL_QUESTION))
                assert [o.error for o in during if not o.ok] == [], "readers answered all along"
                spool = tmp_path / "records.sqlite3.spool"
                queued = sum(
                    1 for f in spool.glob("*") if f.name != "lock"
                    for line in f.read_bytes().splitlines() if json.loads(line).get("turn")
                )
                assert queued > 0, "the records wait in the spool"
                if proxy is not None:
                    assert stored_turns(tmp_path, url) == first
                    proxy.restore()
                else:
                    assert lock is not None
                    lock.execute("ROLLBACK")
                    lock.close()
                everything = first | {o.turn_id for o in during}
                wait_until(lambda: stored_turns(tmp_path, url) == everything,
                           "the spooled records reaching the database")
        finally:
            if proxy is not None:
                proxy.close()
    assert len(model.requests) == 25
