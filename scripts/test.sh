#!/usr/bin/env bash
# Install everything the tests need (Python deps, Debian's chromium), then lint, type-check
# and run the whole test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x /usr/bin/chromium ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
bash scripts/setup.sh

export NO_MKDOCS_2_WARNING=1
.venv/bin/ruff check .
.venv/bin/mypy
.venv/bin/python -m pytest "$@"
