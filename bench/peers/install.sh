#!/usr/bin/env bash
# Install the peer systems the durable-throughput benchmark compares against into their own
# virtual environment (bench/.venv-peers), so their dependencies never meet openseal's.
# Usage: bash bench/peers/install.sh [python]   (default: python3)
# Exit status 0 when every peer installed; otherwise the failing pip output is in
# bench/.venv-peers/install.log and the benchmark reports the peer as "not available".
set -u
here="$(cd "$(dirname "$0")" && pwd)"
venv="$here/../.venv-peers"
python="${1:-python3}"
log="$venv/install.log"

if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv" || { echo "cannot create $venv" >&2; exit 1; }
fi
: >"$log"
status=0
"$venv/bin/pip" install --quiet --upgrade pip >>"$log" 2>&1 || true
# DBOS Transact 3.x keeps its system database on SQLite when given a sqlite:// URL, on
# PostgreSQL when given a postgresql:// one (through psycopg).
"$venv/bin/pip" install --quiet 'dbos>=3,<4' 'psycopg[binary]>=3.2' >>"$log" 2>&1 \
  || { echo "dbos: install failed" >>"$log"; status=1; }
# LangGraph with its SQLite and its PostgreSQL checkpointers.
"$venv/bin/pip" install --quiet 'langgraph>=1,<2' 'langgraph-checkpoint-sqlite' \
  'langgraph-checkpoint-postgres' 'aiosqlite' >>"$log" 2>&1 \
  || { echo "langgraph: install failed" >>"$log"; status=1; }
"$venv/bin/pip" freeze >"$venv/versions.txt" 2>>"$log" || true
exit $status
