#!/usr/bin/env bash
# Copy DocPilot's browser core (the wheel the build wrote for the widget's Pyodide worker)
# next to the Worker's entry, where Python Workers import it from.
# Usage: bash deploy/cloudflare/prepare.sh [SITE_DIR]   (default: site, from example-site/)
set -euo pipefail
SITE="${1:-site}"
HERE="$(cd "$(dirname "$0")" && pwd)"
shopt -s nullglob
wheels=("$SITE"/docpilot/pyodide/docpilot_browser-*.whl)
if [ "${#wheels[@]}" -ne 1 ]; then
  echo "prepare.sh: expected one docpilot_browser wheel in $SITE/docpilot/pyodide/; run mkdocs build first" >&2
  exit 1
fi
rm -rf "$HERE/src/docpilot_runtime"
python3 -m zipfile -e "${wheels[0]}" "$HERE/src/"
rm -rf "$HERE"/src/docpilot_browser-*.dist-info
echo "prepare.sh: copied the browser core from ${wheels[0]} into $HERE/src/"
