#!/usr/bin/env bash
# Set up, build example-site with the docpilot plugin, and serve it on http://127.0.0.1:8000.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export NO_MKDOCS_2_WARNING=1
.venv/bin/mkdocs build -f example-site/mkdocs.yml
echo "Serving example-site on http://127.0.0.1:8000 (Ctrl+C to stop)"
exec .venv/bin/python -m http.server 8000 --bind 127.0.0.1 --directory example-site/site
