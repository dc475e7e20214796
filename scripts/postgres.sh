#!/usr/bin/env bash
# A throwaway PostgreSQL on a loopback port for the tests: `start` installs Debian's
# postgresql if missing, makes a cluster in /tmp (one per work tree, outside it so the
# `postgres` user can reach it whatever the tree's permissions; as that user because
# initdb refuses root) and starts it; it prints the URL to export as
# DOCPILOT_TEST_POSTGRES_URL. `stop` stops it and removes the cluster.
set -euo pipefail
cd "$(dirname "$0")/.."

# A free loopback port unless one is given, so parallel runs cannot collide.
PORT="${DOCPILOT_TEST_POSTGRES_PORT:-$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
DIR="/tmp/docpilot-postgres-$(pwd | cksum | cut -d ' ' -f 1)"
DATA="$DIR/data"
SOCKETS="$DIR/sockets"

as_postgres() {
  if [ "$(id -un)" = postgres ]; then "$@"
  elif [ "$(id -u)" -eq 0 ]; then su postgres -s /bin/sh -c "$(printf '%q ' "$@")"
  else sudo -u postgres "$@"
  fi
}

bindir() {
  local found
  found="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
  [ -n "$found" ] && echo "$found"
}

case "${1:-}" in
  start)
    if [ -z "$(bindir)" ]; then
      SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
      $SUDO apt-get update -qq
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq postgresql >/dev/null
    fi
    BIN="$(bindir)"
    if [ -f "$DATA/postmaster.pid" ]; then
      as_postgres "$BIN/pg_ctl" -D "$DATA" -m fast stop >/dev/null 2>&1 || true
    fi
    rm -rf "$DIR"
    mkdir -p "$DATA" "$SOCKETS"
    chown -R postgres "$DIR" 2>/dev/null || true
    chmod 700 "$DATA"
    as_postgres "$BIN/initdb" -D "$DATA" -U postgres -A trust --no-sync >/dev/null
    as_postgres "$BIN/pg_ctl" -D "$DATA" -l "$DIR/server.log" -w -t 60 \
      -o "-p $PORT -k $SOCKETS -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null
    as_postgres "$BIN/createdb" -h 127.0.0.1 -p "$PORT" -U postgres docpilot_test
    echo "postgresql://postgres@127.0.0.1:$PORT/docpilot_test"
    ;;
  stop)
    BIN="$(bindir)"
    if [ -n "$BIN" ] && [ -f "$DATA/postmaster.pid" ]; then
      as_postgres "$BIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null
    fi
    rm -rf "$DIR"
    ;;
  *)
    echo "usage: scripts/postgres.sh start|stop" >&2
    exit 2
    ;;
esac
