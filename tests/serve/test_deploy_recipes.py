"""The deployment recipes in ``example-site/deploy/``, run as far as this machine allows.

There is no Docker, systemd or GitHub runner here, so each recipe is read by its own
format's rules and its commands are run for real against the wheel built from this tree,
installed in a fresh venv (``fresh_install``): the workflow's ``run`` steps in order, the
Dockerfile's instructions with its container paths mapped into a temporary root, the
systemd unit's ``ExecStart``, and the Python Workers entry under Pyodide in Node. Package
installs run offline (``--no-index``) against that venv, so a recipe that names a package
the venv does not hold fails.
"""

from __future__ import annotations

import configparser
import json
import random
import re
import shlex
import shutil
import string
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from corpora import EXAMPLE_SITE, ROOT
from fresh_install import FreshSite
from install_lines import stand_in
from servers.processes import free_port

DEPLOY = EXAMPLE_SITE / "deploy"
QUESTION = {"question": "How do I exclude a page from the assistant?"}




def _shims(fresh: FreshSite, where: Path) -> Path:
    """A ``bin`` dir whose ``pip`` installs into the fresh venv offline, from the wheel
    built for this session; first on PATH, before the venv's own scripts."""
    shims = where / "shims"
    shims.mkdir(parents=True, exist_ok=True)
    wheels = fresh.venv.parent / "wheels"
    pip = shims / "pip"
    pip.write_text(
        "#!/bin/sh\n"
        f'exec {sys.executable} -m pip --python {fresh.venv}/bin/python "$@" '
        f"--no-index --find-links {wheels} --disable-pip-version-check -q\n",
        encoding="utf-8",
    )
    pip.chmod(0o755)
    return shims


def _wheel(fresh: FreshSite) -> Path:
    """The wheel the fresh venv was installed from (fresh_install builds it)."""
    (wheel,) = (fresh.venv.parent / "wheels").glob("mkdocs_docpilot-*.whl")
    return wheel


def _env(fresh: FreshSite, shims: Path, **extra: str) -> dict[str, str]:
    return {**fresh.env, "PATH": f"{shims}:{fresh.venv / 'bin'}:/usr/bin:/bin", **extra}


def _run(command: str, cwd: Path, env: dict[str, str]) -> None:
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, (
        f"{command!r} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    )


@contextmanager
def _serving(argv: list[str], env: dict[str, str], port: int, ready: list[str]) -> Iterator[str]:
    """Start a server command and yield its base URL once ``ready`` (a command) exits 0:
    polled against a deadline, as a container's healthcheck would be."""
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while subprocess.run(ready, env=env, capture_output=True).returncode != 0:
            if process.poll() is not None:
                pytest.fail(f"{argv} exited {process.returncode}: {process.stderr.read()!r}")  # type: ignore[union-attr]
            if time.monotonic() > deadline:
                pytest.fail(f"{argv}: {ready} did not pass within 120 s")
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.communicate(timeout=30)


def _answers(base_url: str) -> dict[str, Any]:
    health = httpx.get(f"{base_url}/api/health", timeout=10).json()
    assert health["units"] > 100, health
    result: dict[str, Any] = httpx.post(f"{base_url}/api/ask", json=QUESTION, timeout=30).json()
    assert result["kind"] == "passages", result
    assert any("plugin-configuration" in c["url"] for c in result["citations"]), result
    return result


# --- GitHub Actions -------------------------------------------------------------------


@pytest.mark.timeout(900)
def test_github_pages_workflow_builds_static_mode_and_caches_the_embeddings(
    fresh_site: FreshSite, tmp_path: Path
) -> None:
    workflow = yaml.safe_load((DEPLOY / "github-pages.yml").read_text(encoding="utf-8"))
    workspace = tmp_path / "workspace"
    shutil.copytree(EXAMPLE_SITE, workspace, ignore=shutil.ignore_patterns("site", "deploy"))

    def expand(value: str) -> str:
        return value.replace("${{ github.workspace }}", str(workspace))

    env = _env(
        fresh_site,
        _shims(fresh_site, tmp_path),
        **{k: expand(v) for k, v in workflow["env"].items()},
    )
    steps = workflow["jobs"]["build"]["steps"]
    uses = [step["uses"].split("@")[0] for step in steps if "uses" in step]
    assert uses == [
        "actions/checkout",
        "actions/setup-python",
        "actions/cache",
        "actions/upload-pages-artifact",
    ]
    for step in steps:
        if "run" in step:
            # The repository (`git+` lines) is this session's wheel: no host reached.
            _run(stand_in(step["run"], _wheel(fresh_site)), workspace, env)
    (cache_step,) = [s for s in steps if s.get("uses", "").startswith("actions/cache")]
    cached = workspace / cache_step["with"]["path"]
    # What the workflow caches is where the build wrote its embeddings.
    assert cached == Path(env["XDG_CACHE_HOME"]) / "docpilot"
    assert any(p.is_file() for p in cached.rglob("*")), f"nothing was cached in {cached}"
    (upload,) = [s for s in steps if s.get("uses", "").startswith("actions/upload-pages-artifact")]
    published = workspace / upload["with"]["path"]
    assert (published / "docpilot" / "static.json").is_file()
    assert (published / "docpilot" / "pyodide" / "pyodide.asm.wasm.gz").is_file()
    assert workflow["permissions"] == {"contents": "read", "pages": "write", "id-token": "write"}


# --- Dockerfile -----------------------------------------------------------------------


def _instructions(text: str) -> list[tuple[str, str]]:
    """The Dockerfile's instructions as (OP, arguments), continuations joined."""
    joined = re.sub(r"\\\n\s*", " ", text)
    out = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            op, _, args = line.partition(" ")
            out.append((op.upper(), args.strip()))
    return out


@pytest.mark.timeout(900)
def test_dockerfile_builds_and_serves_as_a_non_root_user_with_a_healthcheck(
    fresh_site: FreshSite, tmp_path: Path
) -> None:
    steps = _instructions((DEPLOY / "Dockerfile").read_text(encoding="utf-8"))
    root = tmp_path / "container"
    port = free_port()

    def host(text: str) -> str:
        """Container paths (absolute ones under /docs, /srv, /root) mapped into ``root``."""
        return re.sub(r"(?<![\w.:/])/(docs|srv|root)\b", lambda m: f"{root}/{m.group(1)}", text)

    env = _env(fresh_site, _shims(fresh_site, tmp_path), HOME=f"{root}/root")
    env.pop("XDG_CACHE_HOME")  # a container has none: the cache goes under $HOME/.cache
    ignored = (EXAMPLE_SITE / ".dockerignore").read_text(encoding="utf-8").split()
    # The build context: the docs project as .dockerignore leaves it, plus the wheels/
    # folder the Dockerfile installs DocPilot from (this session's wheel).
    context = tmp_path / "context"
    shutil.copytree(EXAMPLE_SITE, context,
                    ignore=shutil.ignore_patterns(*[p.rstrip("/") for p in ignored]))
    shutil.copytree(_wheel(fresh_site).parent, context / "wheels")
    workdir, user, stages, cache_targets = root, "root", [], []
    healthcheck: list[str] = []
    command: list[str] = []
    for op, args in steps:
        if op == "FROM":
            stages.append(args)
        elif op == "WORKDIR":
            workdir = Path(host(args))
            workdir.mkdir(parents=True, exist_ok=True)
        elif op == "COPY":
            parts = args.split()
            source = Path(host(parts[1])) if parts[0].startswith("--from=") else context / parts[0]
            target = workdir / host(parts[-1])  # relative to WORKDIR unless absolute
            assert len(parts) == (3 if parts[0].startswith("--from=") else 2), parts
            shutil.copytree(source, target, dirs_exist_ok=True)
        elif op == "RUN":
            mount = re.match(r"--mount=type=cache,target=(\S+)\s+", args)
            if mount:
                cache_targets.append(mount.group(1))
                args = args[mount.end() :]
            if args.startswith("useradd"):
                # Needs root inside an image; here, check it makes the user USER names.
                name = shlex.split(args)[-1]
                assert "--uid" in args and name != "root"
                continue
            _run(stand_in(host(args), _wheel(fresh_site)), workdir, env)
        elif op == "USER":
            user = args
        elif op == "HEALTHCHECK":
            healthcheck = json.loads(args[args.index("CMD") + 3 :].strip())
        elif op == "CMD":
            command = json.loads(args)
        else:
            assert op in {"EXPOSE", "ENV"}, op
    assert len(stages) == 2 and user == "docpilot"
    # The build stage's cache mount is where the default embedding cache lives for root.
    assert cache_targets == ["/root/.cache/docpilot"]
    assert any((root / "root" / ".cache" / "docpilot").rglob("*.*"))
    assert "/api/health" in " ".join(healthcheck)
    argv = [host(a) for a in command]
    argv[argv.index("--host") + 1] = "127.0.0.1"
    argv[argv.index("--port") + 1] = str(port)
    argv[0] = str(fresh_site.venv / "bin" / argv[0])
    ready = [
        str(fresh_site.venv / "bin" / "python"),
        *[a.replace(":8000/", f":{port}/") for a in healthcheck[1:]],
    ]
    with _serving(argv, env, port, ready) as base_url:
        _answers(base_url)


# --- systemd --------------------------------------------------------------------------


@pytest.mark.timeout(600)
def test_systemd_unit_runs_docpilot_serve_unprivileged(
    fresh_site: FreshSite, example_site: Path, tmp_path: Path
) -> None:
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read(DEPLOY / "docpilot.service", encoding="utf-8")
    service = unit["Service"]
    assert service["User"] == "docpilot" and service["NoNewPrivileges"] == "true"
    assert unit["Install"]["WantedBy"] == "multi-user.target"
    settings = tmp_path / "docpilot.toml"
    settings.write_text("[server]\ncors_origins = []\n", encoding="utf-8")
    key, _, value = service["Environment"].partition("=")
    assert key == "DOCPILOT_CONFIG" and value == "/etc/docpilot.toml"
    port = free_port()
    argv = shlex.split(service["ExecStart"])
    mapped = {"/srv/docpilot/.venv": str(fresh_site.venv), "/srv/docpilot/site": str(example_site)}
    argv = [next((a.replace(k, v) for k, v in mapped.items() if a.startswith(k)), a) for a in argv]
    assert argv[argv.index("--host") + 1] == "127.0.0.1"
    argv[argv.index("--port") + 1] = str(port)
    env = {**fresh_site.env, key: str(settings)}
    ready = [
        str(fresh_site.venv / "bin" / "python"),
        "-c",
        f"import urllib.request; urllib.request.urlopen('http://127.0.0.1:{port}/api/health', timeout=2)",
    ]
    with _serving(argv, env, port, ready) as base_url:
        _answers(base_url)


# --- Cloudflare Python Workers --------------------------------------------------------


def _github_token() -> str:
    pick = random.Random(11)
    return "ghp_" + "".join(pick.choice(string.ascii_letters + string.digits) for _ in range(36))


@pytest.mark.timeout(600)
def test_python_workers_entry_answers_under_pyodide(example_site: Path, tmp_path: Path) -> None:
    worker = tmp_path / "worker"
    shutil.copytree(DEPLOY / "cloudflare", worker)
    _run(f"bash {worker / 'prepare.sh'} {example_site}", tmp_path, {"PATH": "/usr/bin:/bin"})
    assert (worker / "src" / "docpilot_runtime" / "browser" / "worker.py").is_file()
    config = (worker / "wrangler.toml").read_text(encoding="utf-8")
    assert 'main = "src/entry.py"' in config and '"python_workers"' in config
    requests = [
        {"method": "GET", "path": "/api/health"},
        {"method": "POST", "path": "/api/ask", "body": json.dumps(QUESTION)},
        {
            "method": "POST",
            "path": "/api/ask",
            "body": json.dumps({"question": f"my token is {_github_token()}"}),
        },
        {"method": "POST", "path": "/api/ask", "body": "{}"},
        {"method": "POST", "path": "/api/ask", "body": "x" * 70_000},
        {"method": "GET", "path": "/reference/plugin-configuration/"},
    ]
    done = subprocess.run(
        [
            "node",
            str(ROOT / "tools" / "pyodide" / "run-worker.mjs"),
            str(worker / "src"),
            str(example_site),
            json.dumps(requests),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=540,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    health, answer, credential, empty, huge, page = json.loads(done.stdout.splitlines()[-1])
    assert health["status"] == 200 and json.loads(health["body"])["mode"] == "static"
    result = json.loads(answer["body"])
    assert answer["status"] == 200 and result["kind"] == "passages"
    assert any(c["url"].startswith("/reference/plugin-configuration/") for c in result["citations"])
    assert json.loads(credential["body"])["kind"] == "credential"
    assert empty["status"] == 400 and json.loads(empty["body"])["error"]["field"] == "question"
    assert huge["status"] == 413 and json.loads(huge["body"])["error"]["limit"] == 65536
    assert page["status"] == 200 and "<html" in page["body"]
