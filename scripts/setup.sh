#!/usr/bin/env bash
# Create .venv and install DocPilot with everything the tests and the demo need, and put
# the pinned Pyodide core (reduced and precompressed) where an editable install finds it.
# Safe to re-run: it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
# The npm Pyodide runs the browser core's tests under Node; without npm the core is
# fetched from the npm registry over HTTPS instead (pyodide_core.py checks its sha256).
if command -v npm >/dev/null; then
  npm install --no-audit --no-fund --silent
fi
ASSETS=runtime/docpilot_runtime/pyodide-core
if ! .venv/bin/python -c "import sys; sys.path.insert(0, 'runtime/docpilot_runtime/browser'); import pyodide_core as c, pathlib; sys.exit(not c.is_prepared(pathlib.Path('$ASSETS')))"; then
  if [ -f node_modules/pyodide/python_stdlib.zip ]; then
    .venv/bin/python runtime/docpilot_runtime/browser/pyodide_core.py --from node_modules/pyodide --into "$ASSETS"
  else
    .venv/bin/python runtime/docpilot_runtime/browser/pyodide_core.py --into "$ASSETS"
  fi
fi
