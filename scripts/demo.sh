#!/usr/bin/env bash
# Set up, build example-site with the docpilot plugin, and serve it on http://127.0.0.1:8000.
set -euo pipefail
cd "$(dirname "$0")/.."
# Also puts the pinned Pyodide core (the widget's in-browser check runs on it) where the
# editable install finds it: from npm when Node is here, else fetched over HTTPS.
bash scripts/setup.sh
export NO_MKDOCS_2_WARNING=1
.venv/bin/mkdocs build -f example-site/mkdocs.yml
echo "Serving example-site and the DocPilot API on http://127.0.0.1:8000 (Ctrl+C to stop)"
echo "Try: curl -s localhost:8000/api/ask -H 'Content-Type: application/json' -d '{\"question\": \"How do I exclude a page?\"}'"
exec .venv/bin/docpilot serve example-site/site --host 127.0.0.1 --port 8000
