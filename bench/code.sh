#!/usr/bin/env bash
# Benchmark (not a test): what `sandcell code` costs over running the interpreter directly, in ONE
# hyperfine run:
#   host      /usr/bin/python3 -c 'print(1)'      (the host's Debian python3; HOST_PYTHON to change)
#   sandcell  sandcell code --skill python FILE   with print(1) in FILE (scratch workspace, sandbox
#             of the python skill image, collection, JSON result); as root with --userns=auto
#   sandcell-userns-host   the same with --userns host (no user namespace of its own)
# The overhead is the difference of the means, in ms; --userns=auto's cost is a ratio.
#
# Usage: sudo bench/code.sh [BUILD_DIR]
# Environment:
#   BUILD  build tree with cli/sandcell (default: build/default)
#   ROOT   image store with the python skill built (default: the build's SANDCELL_TEST_STORE,
#          else $BUILD/test-store: the test fixture's; bench/store.sh)
#   RUNS   hyperfine --runs (default 30); WARMUP (default 3)
#   OUT    directory for code.md / code.json (default: $BUILD/bench)
set -euo pipefail

die() {
  echo "bench/code.sh: error: $*" >&2
  exit 1
}

BUILD=${1:-${BUILD:-build/default}}
# shellcheck source=bench/store.sh
. "$(dirname "$0")/store.sh"
ROOT=${ROOT:-$(test_store "$BUILD")}
RUNS=${RUNS:-30}
WARMUP=${WARMUP:-3}
OUT=${OUT:-$BUILD/bench}
SANDCELL=$BUILD/cli/sandcell
# Debian's python3, the same interpreter the skill image has (a pyenv shim on PATH adds ~300 ms).
HOST_PYTHON=${HOST_PYTHON:-/usr/bin/python3}

[ "$(id -u)" -eq 0 ] || die "must run as root: sudo $0 $*"
for tool in hyperfine python3 jq; do
  command -v "$tool" >/dev/null 2>&1 || die "missing $tool (scripts/install-deps.sh)"
done
[ -x "$SANDCELL" ] || die "$SANDCELL not built (cmake --build --preset default)"
skill_built "$SANDCELL" "$ROOT" python ||
  die "the python skill is not built in $ROOT (sandcell --root $ROOT skills build python)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo 'print(1)' > "$work/one.py"
# Smoke test: both print 1.
[ "$($HOST_PYTHON -c 'print(1)')" = 1 ] || die "host python3 does not print 1"
[ "$("$SANDCELL" --root "$ROOT" code --skill python "$work/one.py")" = 1 ] || die "sandcell code does not print 1"

mkdir -p "$OUT"
hyperfine --runs "$RUNS" --warmup "$WARMUP" -N \
  --export-json "$OUT/code.json" --export-markdown "$OUT/code.md" \
  -n host "$HOST_PYTHON -c 'print(1)'" \
  -n sandcell "$SANDCELL --root $ROOT code --skill python $work/one.py" \
  -n sandcell-userns-host "$SANDCELL --root $ROOT code --userns host --skill python $work/one.py"

jq -r '.results as $r | ($r[] | select(.command == "host") | .mean) as $h |
       ($r[] | select(.command == "sandcell") | .mean) as $s |
       "overhead of sandcell code --skill python: \(((($s - $h) * 1000) * 10 | round) / 10) ms " +
       "(host python3 \(($h * 1000 * 10 | round) / 10) ms, sandcell \(($s * 1000 * 10 | round) / 10) ms)"' "$OUT/code.json"
jq -r '.results as $r | ($r[] | select(.command == "sandcell") | .mean) as $a |
       ($r[] | select(.command == "sandcell-userns-host") | .mean) as $h |
       "--userns=auto (the default) against --userns host: \((($a - $h) * 1000 * 10 | round) / 10) ms, " +
       "x\((($a / $h) * 1000 | round) / 1000)"' "$OUT/code.json"
