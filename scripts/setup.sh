#!/usr/bin/env bash
# Create .venv and install DocPilot with everything the tests and the demo need, and put
# the pinned Pyodide core (reduced and precompressed) where an editable install finds it.
# Safe to re-run: it only installs what is missing.
#   bash scripts/setup.sh                    all of it (scripts/demo.sh)
#   bash scripts/setup.sh --no-pyodide-core  all but the core, which scripts/test.sh
#                                            prepares beside its other steps
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
# uv installs the packages in about 4 s where pip takes about 30 (measured on a fresh
# 2-core machine, empty caches). uv reads neither pip.conf nor PIP_INDEX_URL: an index set
# there is handed over, and where uv still cannot install, pip does it as before.
if [ -n "${PIP_INDEX_URL:-}" ]; then export UV_DEFAULT_INDEX="${UV_DEFAULT_INDEX:-$PIP_INDEX_URL}"; fi
PIP=(.venv/bin/python -m pip install --quiet --disable-pip-version-check)
if ! { [ -x .venv/bin/uv ] || "${PIP[@]}" uv; } \
  || ! .venv/bin/uv pip install --quiet --python .venv/bin/python --upgrade pip -e '.[test]'; then
  echo "setup: uv could not install the packages; pip installs them instead" >&2
  "${PIP[@]}" --upgrade pip
  "${PIP[@]}" -e '.[test]'
fi
# The npm Pyodide runs the browser core's tests under Node; without npm the core is
# fetched from the npm registry over HTTPS instead (pyodide_core.py checks its sha256).
if command -v npm >/dev/null; then
  npm install --no-audit --no-fund --silent
fi
if [ "${1:-}" != "--no-pyodide-core" ]; then
  bash scripts/pyodide-core.sh
fi
