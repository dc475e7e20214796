"""`docpilot serve` as a real subprocess on a free loopback port, for tests where several
runtime processes share one database (caps) or one must be killed for real.

    with ServeProcess(site, config, tmp_path / "a.log", database_url) as runtime:
        httpx.post(runtime.base_url + "/api/ask", json={...})
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

import httpx

STARTUP_SECONDS = 120.0  # loading the embedder on a busy 2-core machine


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class ServeProcess:
    """One `docpilot serve SITE --config CONFIG` with ``DOCPILOT_DATABASE_URL`` set to
    ``database_url`` ("" = unset: the settings' SQLite file). Its output goes to ``log``."""

    def __init__(
        self, site: Path | str, config: Path, log: Path, database_url: str = "", *extra: str
    ) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.log = log
        env = {k: v for k, v in os.environ.items() if k != "DOCPILOT_DATABASE_URL"}
        if database_url:
            env["DOCPILOT_DATABASE_URL"] = database_url
        self._out = log.open("ab")
        command = [sys.executable, "-m", "docpilot_runtime.cli", "serve", str(site),
                   "--port", str(self.port), "--config", str(config), *extra]
        self.process = subprocess.Popen(command, stdout=self._out, stderr=subprocess.STDOUT, env=env)

    def __enter__(self) -> ServeProcess:
        try:
            self.wait_healthy()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def wait_healthy(self) -> None:
        """Poll `/api/health` until it answers (never a fixed sleep), with a deadline."""
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the runtime exited with {self.process.returncode}: "
                                   f"{self.log.read_text(errors='replace')[-2000:]}")
            try:
                if httpx.get(f"{self.base_url}/api/health", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise TimeoutError(f"the runtime did not answer within {STARTUP_SECONDS} s")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(30)
        self._out.close()


def descendants(pid: int) -> set[int]:
    """Every live process under ``pid`` (a `serve --workers N` parent's workers), read
    from /proc (Linux)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # gone since the glob
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        parents[int(stat.parent.name)] = int(text.rsplit(")", 1)[1].split()[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def serving_pid(serve_pid: int, server_port: int, client_port: int) -> int | None:
    """Which process under ``serve_pid`` holds the server end of the loopback connection
    from ``client_port`` (it has accepted it, so it answers what is sent on it)."""
    inode = ""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, remote = (int(f.rsplit(":", 1)[1], 16) for f in fields[1:3])
            if (local, remote) == (server_port, client_port) and fields[9] != "0":
                inode = fields[9]
    if not inode:
        return None
    for pid in descendants(serve_pid):
        try:
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            with contextlib.suppress(OSError):
                if os.readlink(fd) == f"socket:[{inode}]":
                    return pid
    return None
