#!/usr/bin/env bash
# Benchmark (not a test): python snippets through every path sandcell offers, interleaved (issue 30):
#   chroot       the skill image's own python3, chroot'd into its layers (a read-only overlay of
#                them, mounted here): the same interpreter with no isolation at all
#   code         `sandcell code --skill python FILE`, cold (the one-shot CLI)
#   serve-cold   POST /v1/run to `sandcell serve` without --pool
#   serve-pool   the same to `sandcell serve --pool python=POOL`
#   mcp-cold     tools/call run_code to `sandcell mcp` on stdio
#   mcp-pool     the same to `sandcell mcp --pool python=POOL`
# for each of print(1) and `import numpy as np; print(np.arange(10).sum())`; bench/pool_client.py
# rotates the order round by round and, after a pooled request, rests until that server's tree
# holds POOL interpreters again and uses no CPU (at most SETTLE seconds): its pool has refilled, so each request finds a prepared sandbox
# and no other line pays for the refill. Prints per
# line and snippet the median, p90, p99, min, how many were pooled (both HTTP and MCP say) and
# the ratio to chroot; then the memory of the servers and of their prepared sandboxes.
# BACK_TO_BACK=N adds the old measurement: N print(1) requests back to back on one connection to
# a pool of POOL, which drains after POOL requests and then refills beside the requests.
#
# Usage: sudo bench/pool.sh [BUILD_DIR]
# Environment: ROOT (image store with the python skill; default the build's SANDCELL_TEST_STORE,
#   else $BUILD/test-store), ROUNDS (20), WARMUP (1), POOL (2), SETTLE (10 s), SNIPPETS
#   (print,numpy), LINES (the lines above, space-separated, in order; the first is the base of the
#   ratios), OUT (directory for pool.json; default $BUILD/bench), BACK_TO_BACK (0)
set -euo pipefail

die() {
  echo "bench/pool.sh: error: $*" >&2
  exit 1
}

BUILD=${1:-${BUILD:-build/default}}
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/store.sh
. "$HERE/store.sh"
ROOT=${ROOT:-$(test_store "$BUILD")}
ROUNDS=${ROUNDS:-20}
WARMUP=${WARMUP:-1}
POOL=${POOL:-2}
SETTLE=${SETTLE:-10}
SNIPPETS=${SNIPPETS:-print,numpy}
LINES=${LINES:-chroot code serve-cold serve-pool mcp-cold mcp-pool}
OUT=${OUT:-$BUILD/bench}
BACK_TO_BACK=${BACK_TO_BACK:-0}
SANDCELL=$BUILD/cli/sandcell

[ "$(id -u)" -eq 0 ] || die "must run as root: sudo $0 $*"
for tool in python3 chroot mount; do
  command -v "$tool" >/dev/null 2>&1 || die "missing $tool (scripts/install-deps.sh)"
done
[ -x "$SANDCELL" ] || die "$SANDCELL not built (cmake --build --preset default)"
SANDCELL=$(realpath "$SANDCELL")
skill_built "$SANDCELL" "$ROOT" python ||
  die "the python skill is not built in $ROOT (sandcell --root $ROOT skills build python)"

TMP=$(mktemp -d /tmp/sandcell-bench-pool.XXXXXX)
pids=()
cleanup() {
  # The servers finish what they run and tear their prepared sandboxes down on SIGTERM.
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if mountpoint -q "$TMP/chroot" 2>/dev/null; then umount "$TMP/chroot"; fi
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

lines=()
rss=()
settle=
for name in $LINES; do
  case $name in
    chroot)
      # The image's layers, top first, as one read-only overlay; its config's environment.
      mkdir "$TMP/chroot"
      mount -t overlay -o "ro,lowerdir=$(skill_layers "$SANDCELL" "$ROOT" sandcell/skill-python)" overlay "$TMP/chroot"
      env=$("$SANDCELL" --root "$ROOT" inspect sandcell/skill-python |
            python3 -c 'import json, shlex, sys; print(" ".join(shlex.quote(e) for e in json.load(sys.stdin)[0]["Config"]["config"].get("Env", [])))')
      lines+=("chroot=cmd:$env $(command -v chroot) $TMP/chroot /usr/bin/python3 -c {code}")
      ;;
    code) lines+=("code=cmd:$SANDCELL --root $ROOT code --skill python {file}") ;;
    serve-cold | serve-pool)
      port=$(free_port)
      flags=()
      [ "$name" = serve-pool ] && flags=(--pool "python=$POOL")
      "$SANDCELL" --root "$ROOT" serve --listen "127.0.0.1:$port" --token bench "${flags[@]}" 2>"$TMP/$name.log" &
      pids+=($!)
      lines+=("$name=http:$port")
      rss+=(--rss "$name=$!")
      ;;
    mcp-cold) lines+=("mcp-cold=mcp:$SANDCELL --root $ROOT mcp") rss+=(--rss mcp-cold=self) ;;
    mcp-pool) lines+=("mcp-pool=mcp:$SANDCELL --root $ROOT mcp --pool python=$POOL") rss+=(--rss mcp-pool=self) ;;
    *) die "LINES: no line called '$name'" ;;
  esac
  [[ $name == *-pool ]] && settle+="$name,"
done

mkdir -p "$OUT"
echo "python snippets, interleaved: $ROUNDS rounds (+$WARMUP warm-up), pools of $POOL, rest after a pooled request until its server is idle (at most ${SETTLE}s)"
python3 "$HERE/pool_client.py" --rounds "$ROUNDS" --warmup "$WARMUP" --snippets "$SNIPPETS" \
  --settle "$settle" --settle-seconds "$SETTLE" --pool-size "$POOL" --json "$OUT/pool.json" "${rss[@]}" --lines "${lines[@]}"

if [ "$BACK_TO_BACK" -gt 0 ]; then
  port=$(free_port)
  "$SANDCELL" --root "$ROOT" serve --listen "127.0.0.1:$port" --token bench --pool "python=$POOL" 2>/dev/null &
  pids+=($!)
  echo
  echo "| run | requests | pooled | median ms | p90 ms |"
  echo "|---|---|---|---|---|"
  python3 "$HERE/pool_client.py" "$port" bench "$BACK_TO_BACK" 0 "pool python=$POOL, back to back"
fi
