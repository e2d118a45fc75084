#!/usr/bin/env bash
# Benchmark (not a test): start-to-exit of /bin/true, `sandcell run` with and without
# --userns=auto, in one hyperfine run (bench/README.md, "userns.sh").
#
# Usage: sudo bench/userns.sh [BUILD_DIR]
#   BUILD_DIR  build tree with cli/sandcell and test-rootfs (default: $BUILD or build/default)
# Environment:
#   ROOTFS   rootfs to run /bin/true from (default: $BUILD/test-rootfs)
#   IMAGE    also compare on this image of the store (several layers, each idmapped), e.g.
#            IMAGE=sandcell/skill-python:latest STORE=/var/lib/sandcell
#   STORE    the store IMAGE is in (sandcell --root); default: sandcell's own default
#   RUNS     hyperfine --runs (default 50); WARMUP: hyperfine --warmup (default 5)
set -euo pipefail

die() {
  echo "bench/userns.sh: error: $*" >&2
  exit 1
}

BUILD=${1:-${BUILD:-build/default}}
ROOTFS=$(realpath "${ROOTFS:-$BUILD/test-rootfs}")
RUNS=${RUNS:-50}
WARMUP=${WARMUP:-5}
[ "$(id -u)" -eq 0 ] || die "must run as root: sudo $0 $*"
command -v hyperfine >/dev/null || die "hyperfine missing (scripts/install-deps.sh)"
[ -x "$BUILD/cli/sandcell" ] || die "$BUILD/cli/sandcell not found: cmake --build $BUILD --target sandcell"

# A private copy: a concurrent rebuild would otherwise replace the binary under hyperfine.
TMP=$(mktemp -d /tmp/sandcell-bench-userns.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
# sandcell hands image runs to the sandcell-images next to it.
cp "$BUILD/cli/sandcell" "$TMP/sandcell"
[ -z "${IMAGE:-}" ] || cp "$BUILD/cli/sandcell-images" "$TMP/sandcell-images"
SANDCELL=$TMP/sandcell
root_opt=()
[ -n "${STORE:-}" ] && root_opt=(--root "$STORE")

commands=(-n host "$SANDCELL run --rootfs $ROOTFS -- /bin/true"
          -n userns-auto "$SANDCELL run --userns auto --rootfs $ROOTFS -- /bin/true")
if [ -n "${IMAGE:-}" ]; then
  "$SANDCELL" "${root_opt[@]}" run "$IMAGE" /bin/true || die "sandcell run $IMAGE failed"
  commands+=(-n image-host "$SANDCELL ${root_opt[*]} run $IMAGE /bin/true"
             -n image-userns-auto "$SANDCELL ${root_opt[*]} run --userns auto $IMAGE /bin/true")
fi
"$SANDCELL" run --userns auto --rootfs "$ROOTFS" -- /bin/true || die "sandcell run --userns auto failed"

hyperfine --shell=none --warmup "$WARMUP" --runs "$RUNS" --export-json "$TMP/userns.json" "${commands[@]}" </dev/null
# Mean, median and minimum: on a shared machine the median and the minimum say more than the mean.
python3 - "$TMP/userns.json" <<'PY'
import json, sys
results = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
for base in ("host", "image-host"):
    if base in results:
        auto = base.replace("host", "userns-auto")
        for stat in ("mean", "median", "min"):
            a, b = results[auto][stat], results[base][stat]
            print(f"{auto} {stat:>6}: {a * 1e3:6.2f} ms vs {b * 1e3:6.2f} ms ({(a - b) * 1e3:+.2f} ms, {a / b:.2f}x)")
PY
