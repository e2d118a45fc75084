#!/usr/bin/env bash
# Benchmark (not a test): how close sandcell's start is to the kernel work it cannot avoid. One
# hyperfine run of unshare, bwrap, sandcell, and bench/floor.c at each of its levels (ns, rootfs,
# mounts, cgroups, full: see the top of floor.c), each running /bin/true. The floor's "full" line
# is what a C program doing the same namespaces, overlay, mounts, masks, cgroups, capability drop
# and init costs without seccomp, Landlock, supervision or a result record.
#
# Usage: sudo bench/floor.sh [BUILD_DIR]     (RUNS, default 60; WARMUP, default 5)
set -euo pipefail

die() {
  echo "bench/floor.sh: error: $*" >&2
  exit 1
}

BUILD=${1:-${BUILD:-build/default}}
ROOTFS=${ROOTFS:-$BUILD/test-rootfs}
RUNS=${RUNS:-60}
WARMUP=${WARMUP:-5}
[ "$(id -u)" -eq 0 ] || die "must run as root: sudo $0 $*"
for tool in hyperfine bwrap unshare cc python3; do
  command -v "$tool" >/dev/null 2>&1 || die "missing $tool (scripts/install-deps.sh)"
done
[ -x "$BUILD/cli/sandcell" ] || die "$BUILD/cli/sandcell not found: cmake --build $BUILD --target sandcell"
[ -d "$ROOTFS" ] || die "rootfs $ROOTFS not found: cmake --build $BUILD --target test-rootfs"
ROOTFS=$(realpath "$ROOTFS")

TMP=$(mktemp -d /tmp/sandcell-floor.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
cc -O2 -Wall -o "$TMP/floor" "$(dirname "$0")/floor.c"
cp "$BUILD/cli/sandcell" "$TMP/sandcell"  # a rebuild must not swap it under hyperfine
mkdir -p /run/sandcell/scratch            # where sandcell mounts its scratch tmpfs too
for level in ns rootfs mounts cgroups full; do
  "$TMP/floor" "$level" "$ROOTFS" || die "floor $level failed"
done

JSON=$TMP/floor.json
cmds=(-n unshare "$(command -v unshare) --pid --fork --mount --uts --ipc --net /bin/true")
for level in ns rootfs mounts cgroups full; do
  cmds+=(-n "floor-$level" "$TMP/floor $level $ROOTFS")
done
cmds+=(-n bwrap "$(command -v bwrap) --unshare-all --die-with-parent --ro-bind $ROOTFS / --proc /proc --dev /dev /bin/true")
cmds+=(-n sandcell "$TMP/sandcell run --rootfs $ROOTFS -- /bin/true")
hyperfine --shell=none --warmup "$WARMUP" --runs "$RUNS" --export-json "$JSON" "${cmds[@]}" </dev/null >/dev/null

python3 - "$JSON" <<'EOF'
import json, statistics, sys
results = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
base = statistics.median(results["unshare"]["times"])
print(f"{'command':<16} {'mean ms':>8} {'median':>8} {'min':>8}   x unshare (median)")
for name, r in results.items():
    median = statistics.median(r["times"])
    print(f"{name:<16} {r['mean']*1e3:8.2f} {median*1e3:8.2f} {r['min']*1e3:8.2f}   {median / base:6.2f}")
floor = statistics.median(results["floor-full"]["times"])
sandcell = statistics.median(results["sandcell"]["times"])
print(f"\nsandcell - floor-full (medians): {(sandcell - floor) * 1e3:+.2f} ms "
      "(seccomp, Landlock, the supervisor and its record, the C++ start)")
EOF
