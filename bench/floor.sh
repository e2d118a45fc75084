#!/usr/bin/env bash
# Benchmark (not a test): how close sandcell's start is to the kernel work it cannot avoid. One
# hyperfine run of unshare, bwrap, sandcell, and bench/floor.c at each of its levels (ns, rootfs,
# mounts, cgroups, full: see the top of floor.c), each running /bin/true. The floor's "full" line
# is what a C program doing the same namespaces, overlay, mounts, masks, cgroups, capability drop
# and init costs without seccomp, Landlock, supervision or a result record; "pooled" and
# "parallel" then take sandcell's ways of keeping work off the critical path (a network namespace
# made ahead, the cgroups made while the child mounts and removed while the init exits, the CPU
# hand-off), and "complete" adds the rest issue 2 asks of the kernel (its seccomp deny list, swap
# off, rlimits, fds, the usage the record reads): what sandcell does, by the shortest C program.
#
# Usage: sudo bench/floor.sh [BUILD_DIR]     (RUNS, default 60; WARMUP, default 5; ROUNDS, default
#        200: the interleaved measurement of unshare, floor-complete and sandcell that follows)
set -euo pipefail

die() {
  echo "bench/floor.sh: error: $*" >&2
  exit 1
}

BUILD=${1:-${BUILD:-build/default}}
ROOTFS=${ROOTFS:-$BUILD/test-rootfs}
RUNS=${RUNS:-60}
WARMUP=${WARMUP:-5}
ROUNDS=${ROUNDS:-200}
[[ $ROUNDS =~ ^[0-9]+$ && $ROUNDS -ge 2 ]] || die "ROUNDS must be an integer >= 2 (got '$ROUNDS')"
[ "$(id -u)" -eq 0 ] || die "must run as root: sudo $0 $*"
for tool in hyperfine bwrap unshare python3; do
  command -v "$tool" >/dev/null 2>&1 || die "missing $tool (scripts/install-deps.sh)"
done
[ -x "$BUILD/cli/sandcell" ] || die "$BUILD/cli/sandcell not found: cmake --build $BUILD --target sandcell"
[ -d "$ROOTFS" ] || die "rootfs $ROOTFS not found: cmake --build $BUILD --target test-rootfs"
ROOTFS=$(realpath "$ROOTFS")

# shellcheck source=bench/floor-setup.sh
. "$(dirname "$0")/floor-setup.sh"
TMP=$(mktemp -d /tmp/sandcell-floor.XXXXXX)
cleanup() {
  floor_cleanup
  rm -rf "$TMP"
}
trap cleanup EXIT
floor_setup "$TMP" || die "cannot build or prepare bench/floor.c"
cp "$BUILD/cli/sandcell" "$TMP/sandcell"  # a rebuild must not swap it under hyperfine
LEVELS=(ns rootfs mounts cgroups full pooled parallel complete)
for level in "${LEVELS[@]}"; do
  "$FLOOR" "$level" "$ROOTFS" "$FLOOR_SCRATCH" "$FLOOR_NETNS" || die "floor $level failed"
done

JSON=$TMP/floor.json
cmds=(-n unshare "$(command -v unshare) --pid --fork --mount --uts --ipc --net /bin/true")
for level in "${LEVELS[@]}"; do
  cmds+=(-n "floor-$level" "$(floor_command "$level" "$ROOTFS")")
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
sandcell = statistics.median(results["sandcell"]["times"])
for level, what in (("full", "made one after another, no seccomp"),
                    ("complete", "all issue 2 asks of the kernel, in sandcell's order")):
    floor = statistics.median(results[f"floor-{level}"]["times"])
    print(f"sandcell - floor-{level} (medians): {(sandcell - floor) * 1e3:+.2f} ms ({what})")
floor = statistics.median(results["floor-complete"]["times"])
print(f"floor-complete / unshare (medians): {floor / base:.2f}x (issue 2's target for sandcell: 1.2x)")
EOF

# hyperfine runs each command's block in turn, and this host drifts between blocks: the three
# lines that matter again, round by round in rotating order (bench/interleave.py, as startup.sh).
echo
echo "## Interleaved ($ROUNDS rounds)"
python3 "$(dirname "$0")/interleave.py" --rounds "$ROUNDS" --warmup "$WARMUP" --json "$TMP/interleaved.json" \
  "unshare=$(command -v unshare) --pid --fork --mount --uts --ipc --net /bin/true" \
  "floor-complete=$(floor_command complete "$ROOTFS")" \
  "sandcell=$TMP/sandcell run --rootfs $ROOTFS -- /bin/true"
python3 - "$TMP/interleaved.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
base = s["unshare"]["median"]
for name in ("floor-complete", "sandcell"):
    print(f"{name} / unshare (interleaved medians): {s[name]['median'] / base:.2f}x")
print(f"sandcell - floor-complete: {s['sandcell']['median'] - s['floor-complete']['median']:+.2f} ms "
      "(medians)")
EOF
