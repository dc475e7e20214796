#!/usr/bin/env bash
# Put the pinned Pyodide core (reduced stdlib, .gz/.br siblings) where an editable install
# finds it, unless it is already there: from node_modules/pyodide when `npm install` put
# it there, else fetched over HTTPS from the npm registry (pyodide_core.py checks its
# sha256). Brotli at its best quality makes this about 30 s of one core.
set -euo pipefail
cd "$(dirname "$0")/.."

ASSETS=runtime/docpilot_runtime/pyodide-core
CORE=runtime/docpilot_runtime/browser/pyodide_core.py
if .venv/bin/python -c "import sys; sys.path.insert(0, 'runtime/docpilot_runtime/browser'); import pyodide_core as c, pathlib; sys.exit(not c.is_prepared(pathlib.Path('$ASSETS')))"; then
  exit 0
fi
if [ -f node_modules/pyodide/python_stdlib.zip ]; then
  .venv/bin/python "$CORE" --from node_modules/pyodide --into "$ASSETS"
else
  .venv/bin/python "$CORE" --into "$ASSETS"
fi
