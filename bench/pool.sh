#!/usr/bin/env bash
# Benchmark (not a test): the round trip of python `print(1)` through `sandcell serve`, cold
# (no --pool) and with the warm pool (--pool python=N), in one run: N_REQ sequential requests
# each, on one keep-alive HTTP connection (bench/pool_client.py), medians and p90 in ms.
# Pooled requests are paced (PACE seconds apart, so the pool has refilled: one prepared sandbox
# is a start of the interpreter with numpy imported); back-to-back requests drain a pool of N
# after N and then run cold, which the "pool, back to back" line shows.
#
# Usage: sudo bench/pool.sh [BUILD_DIR]
# Environment: ROOT (image store with the python skill; default $BUILD/test-store), N_REQ (60),
#   POOL (4), PACE (0.6)
set -euo pipefail

BUILD=${1:-${BUILD:-build/default}}
ROOT=${ROOT:-$BUILD/test-store}
N_REQ=${N_REQ:-60}
POOL=${POOL:-4}
PACE=${PACE:-0.6}
SANDCELL=$BUILD/cli/sandcell
HERE=$(cd "$(dirname "$0")" && pwd)

[ "$(id -u)" -eq 0 ] || { echo "bench/pool.sh: must run as root" >&2; exit 1; }
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

run_server() {  # label, pace, serve flags...
  local label=$1 pace=$2
  shift 2
  "$SANDCELL" --root "$ROOT" serve --listen "127.0.0.1:$port" --token bench "$@" 2>/dev/null &
  local pid=$!
  python3 "$HERE/pool_client.py" "$port" bench "$N_REQ" "$pace" "$label"
  kill -TERM "$pid"
  wait "$pid" || true
}

echo "| run | requests | pooled | median ms | p90 ms |"
echo "|---|---|---|---|---|"
run_server "cold" 0
run_server "pool python=$POOL, paced ${PACE}s" "$PACE" --pool "python=$POOL"
run_server "pool python=$POOL, back to back" 0 --pool "python=$POOL"
