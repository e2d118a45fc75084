#!/usr/bin/env bash
# Benchmark (not a test): start-to-exit time of /bin/true with full isolation, in ONE hyperfine run:
#   unshare   unshare --pid --fork --mount --uts --ipc --net /bin/true        (host /bin/true)
#   bwrap     bwrap --unshare-all --die-with-parent --ro-bind ROOTFS / --proc /proc --dev /dev /bin/true
#   runc      runc run on an OCI bundle (from `runc spec`) whose root.path is ROOTFS, read-only
#   sandcell  BUILD/cli/sandcell run --rootfs ROOTFS -- /bin/true
#   sandcell-nopool  (interleaved only) the same with SANDCELL_NETNS_POOL=0: no network namespace
#             made ahead by the run before (runtime/src/netns_pool.hpp), as a host's first run
#   sandcell-rootless  the same as an unprivileged user (a temporary user with a /etc/subuid range,
#             started through `setpriv --reuid --regid --init-groups --reset-env`), in its own user
#             namespace with rlimits instead of cgroups
#   floor-complete  (interleaved only) bench/floor.c's last level: the kernel work sandcell does,
#             by the shortest C program (bench/floor.sh)
#   podman    (interleaved only) podman run --rm --network none --rootfs ROOTFS:O /bin/true with
#             runc as its runtime, in a temporary storage (conmon, the OCI spec, runc, cleanup)
#
# Usage: sudo bench/startup.sh [BUILD_DIR]
#   BUILD_DIR  build tree with cli/sandcell and test-rootfs (default: $BUILD or build/default)
# Environment:
#   BUILD    same as the argument (the argument wins)
#   ROOTFS   rootfs to run /bin/true from (default: $BUILD/test-rootfs)
#   RUNS     hyperfine --runs (default 50); WARMUP: hyperfine --warmup (default 5)
#   ROUNDS   rounds of the interleaved measurement that follows hyperfine's (default 200;
#            bench/interleave.py: each round runs every command once, in rotating order)
#   OUT      directory for the exported startup.md / startup.json (default: $BUILD/bench)
#   HYPERFINE  0: skip the hyperfine run, measure interleaved only (bench/run does)
#   LINES    the interleaved lines, in order, space-separated (default: sandcell unshare
#            floor-complete bwrap runc podman sandcell-nopool sandcell-rootless); sandcell and
#            unshare are always measured. The hyperfine run has its five lines whatever LINES says.
# Targets (see bench/README.md): sandcell <= 1.2x unshare, faster than bwrap, ~10x faster than runc.
set -euo pipefail

die() {
  echo "bench/startup.sh: error: $*" >&2
  exit 1
}

BUILD=${1:-${BUILD:-build/default}}
ROOTFS=${ROOTFS:-$BUILD/test-rootfs}
RUNS=${RUNS:-50}
WARMUP=${WARMUP:-5}
ROUNDS=${ROUNDS:-200}
HYPERFINE=${HYPERFINE:-1}
LINES=${LINES:-sandcell unshare floor-complete bwrap runc podman sandcell-nopool sandcell-rootless}
has_line() { [[ " sandcell unshare $LINES " == *" $1 "* ]]; }
[ "$HYPERFINE" = 0 ] || LINES="$LINES bwrap runc sandcell-rootless"  # the hyperfine run needs them

# ---- prerequisites -------------------------------------------------------------------------------
[ "$(id -u)" -eq 0 ] || die "must run as root (unshare/runc/sandcell need full privileges): sudo $0 $*"
[[ $RUNS =~ ^[0-9]+$ && $RUNS -ge 2 ]] || die "RUNS must be an integer >= 2 (got '$RUNS')"
[[ $WARMUP =~ ^[0-9]+$ ]] || die "WARMUP must be a non-negative integer (got '$WARMUP')"
[[ $ROUNDS =~ ^[0-9]+$ && $ROUNDS -ge 2 ]] || die "ROUNDS must be an integer >= 2 (got '$ROUNDS')"

missing=()
tools=(unshare python3)
[ "$HYPERFINE" = 0 ] || tools+=(hyperfine)
has_line bwrap && tools+=(bwrap)
has_line runc && tools+=(runc)
has_line podman && tools+=(podman runc)
has_line sandcell-rootless && tools+=(setpriv useradd newuidmap)
for tool in "${tools[@]}"; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
[ ${#missing[@]} -eq 0 ] ||
  die "missing tools: ${missing[*]} (run scripts/install-deps.sh: Debian packages hyperfine bubblewrap runc podman util-linux passwd uidmap)"

SANDCELL=$BUILD/cli/sandcell
[ -x "$SANDCELL" ] ||
  die "$SANDCELL not found or not executable: cmake --build $BUILD --target sandcell (or pass the build dir as \$1)"
[ -d "$ROOTFS" ] ||
  die "rootfs $ROOTFS not found: cmake --build $BUILD --target test-rootfs (or set ROOTFS=DIR)"
[ -e "$ROOTFS/bin/true" ] || [ -L "$ROOTFS/bin/true" ] ||
  die "$ROOTFS has no /bin/true (expected a busybox applet symlink)"

SANDCELL=$(realpath "$SANDCELL")
ROOTFS=$(realpath "$ROOTFS")
UNSHARE=$(command -v unshare)
BWRAP=$(command -v bwrap || true)
RUNC=$(command -v runc || true)
HOST_TRUE=$(command -v true 2>/dev/null || true)
[ -x /bin/true ] && HOST_TRUE=/bin/true

# -N / --shell=none (hyperfine >= 1.13) avoids measuring a shell around every command.
hf_version=
shell_opt=()
if [ "$HYPERFINE" = 0 ]; then
  :
elif hf_version=$(hyperfine --version | awk '{print $2}') && hyperfine --help 2>/dev/null | grep -q -- "--shell=none"; then
  shell_opt=(--shell=none)
else
  echo "note: hyperfine $hf_version has no --shell=none; times include a shell spawn (subtracted by hyperfine)" >&2
fi

# ---- temp bundle / state dirs, removed on exit ---------------------------------------------------
TMP=$(mktemp -d /tmp/sandcell-bench.XXXXXX)
chmod 0755 "$TMP"  # the rootless user runs the copy of sandcell kept here
STATE=$TMP/runc-state
BENCH_USER=sandcell-bench-$$
# shellcheck source=bench/floor-setup.sh
. "$(dirname "$0")/floor-setup.sh"
PODMAN_PARENT_MADE=
cleanup() {
  floor_cleanup
  # podman's storage under $TMP: its overlay mounts (the bind of its own storage dir, a
  # container's rootfs a failed run left) go before the directory.
  { grep -F " $TMP/" /proc/self/mountinfo || true; } | awk '{print $5}' | sort -r |
    while read -r m; do umount -l "$m" 2>/dev/null || true; done
  # podman's cgroup parent (cgroupfs manager), when this script made it: empty once every
  # container has gone.
  if [ -n "$PODMAN_PARENT_MADE" ]; then
    for d in /sys/fs/cgroup/*/libpod_parent /sys/fs/cgroup/libpod_parent; do
      [ -d "$d" ] || continue
      find "$d" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null || true
      rmdir "$d" 2>/dev/null || true
    done
  fi
  # Every rootless run has ended (hyperfine waits for each): nothing of the user is left to stop.
  if id "$BENCH_USER" >/dev/null 2>&1; then userdel "$BENCH_USER" || true; fi
  # Any container a failed run left behind (runc run without -d deletes its own on exit).
  if [ -d "$STATE" ]; then
    for id in $("$RUNC" --root "$STATE" list -q 2>/dev/null); do
      "$RUNC" --root "$STATE" delete -f "$id" >/dev/null 2>&1 || true
    done
  fi
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# bwrap (--proc /proc --dev /dev onto a read-only /) and runc need the mount points to exist in the
# rootfs, and runc would otherwise create them inside it. If any is missing, benchmark all four on a
# copy that has them, so the rootfs given is never modified and every runtime sees the same tree.
for d in proc dev sys; do
  if [ ! -d "$ROOTFS/$d" ]; then
    echo "note: $ROOTFS lacks /$d; using a copy with proc/ dev/ sys/ added ($TMP/rootfs)" >&2
    cp -a "$ROOTFS" "$TMP/rootfs"
    mkdir -p "$TMP/rootfs/proc" "$TMP/rootfs/dev" "$TMP/rootfs/sys"
    ROOTFS=$TMP/rootfs
    break
  fi
done

if has_line runc || has_line podman; then
# OCI bundle: runc's default spec (namespaces pid, net, ipc, uts, mount, cgroup; all caps but a few
# dropped; masked paths; devices cgroup), edited to run /bin/true without a terminal on ROOTFS read-only.
BUNDLE=$TMP/bundle
mkdir -p "$BUNDLE" "$STATE"
(cd "$BUNDLE" && "$RUNC" spec)
python3 - "$BUNDLE/config.json" "$ROOTFS" <<'EOF'
import json, sys
path, rootfs = sys.argv[1], sys.argv[2]
with open(path) as f:
    spec = json.load(f)
spec["process"]["args"] = ["/bin/true"]
spec["process"]["terminal"] = False
spec["root"] = {"path": rootfs, "readonly": True}
with open(path, "w") as f:
    json.dump(spec, f, indent=2)
EOF

# hyperfine runs each command many times and `runc run` needs a unique container id: a tiny /bin/sh
# wrapper uses its own pid (one dash exec, well under a millisecond, is charged to runc). `runc run`
# without -d deletes the container when it exits; the trap catches any a failed run leaves.
RUNC_WRAPPER=$TMP/runc-run.sh
cat >"$RUNC_WRAPPER" <<EOF
#!/bin/sh
exec "$RUNC" --root "$STATE" run --bundle "$BUNDLE" "sandcell-bench-\$\$"
EOF
chmod +x "$RUNC_WRAPPER"
fi

# podman with runc as its runtime, on the same rootfs (":O": an overlay over it, so podman's
# /etc/hosts and friends never touch it), in a storage of its own under $TMP. The rlimits are
# given: podman's defaults (nofile and nproc 1048576) exceed what a shell here may set, and runc
# then refuses to start. --events-backend none: no journal or event file per run.
PODMAN_RUN=
if has_line podman; then
  [ -d /sys/fs/cgroup/memory/libpod_parent ] || [ -d /sys/fs/cgroup/libpod_parent ] || PODMAN_PARENT_MADE=1
  PODMAN_RUN="$(command -v podman) --root $TMP/podman/root --runroot $TMP/podman/runroot --runtime $RUNC"
  PODMAN_RUN+=" --cgroup-manager cgroupfs --events-backend none --storage-driver vfs"
  PODMAN_RUN+=" run --rm --network none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 --rootfs $ROOTFS:O /bin/true"
fi

# Benchmark a private copy of the sandcell binary: a concurrent rebuild of the build tree would
# otherwise replace it under hyperfine (sandcell finds nothing relative to its own path).
cp "$SANDCELL" "$TMP/sandcell"
SANDCELL_BIN=$SANDCELL
SANDCELL=$TMP/sandcell

# The rootless line: a temporary user (removed on exit) with a subordinate id range, so sandcell
# maps a full range through newuidmap as it would for a real user.
if has_line floor-complete; then
  floor_setup "$TMP" || die "cannot build or prepare bench/floor.c (bench/floor.sh)"
fi
ROOTLESS=
if has_line sandcell-rootless; then
mkdir -p "$TMP/home"
useradd --system --user-group --no-create-home --home-dir "$TMP/home" --shell /usr/sbin/nologin "$BENCH_USER"
usermod --add-subuids 3100000-3165535 --add-subgids 3100000-3165535 "$BENCH_USER"
chown "$BENCH_USER:" "$TMP/home"
SETPRIV=$(command -v setpriv)
ROOTLESS="$SETPRIV --reuid=$BENCH_USER --regid=$BENCH_USER --init-groups --reset-env $SANDCELL run --rootfs $ROOTFS -- /bin/true"
fi

# Smoke-run each command once so a broken runtime fails here with its own message, not in hyperfine.
"$UNSHARE" --pid --fork --mount --uts --ipc --net "$HOST_TRUE" || die "unshare failed"
if has_line bwrap; then
  "$BWRAP" --unshare-all --die-with-parent --ro-bind "$ROOTFS" / --proc /proc --dev /dev /bin/true ||
    die "bwrap failed"
fi
if has_line runc; then "$RUNC_WRAPPER" </dev/null || die "runc run failed (bundle $BUNDLE)"; fi
if has_line podman; then $PODMAN_RUN </dev/null || die "podman run failed: $PODMAN_RUN"; fi
if has_line floor-complete; then "$FLOOR" complete "$ROOTFS" "$FLOOR_SCRATCH" "$FLOOR_NETNS" || die "bench/floor.c failed"; fi
"$SANDCELL" run --rootfs "$ROOTFS" -- /bin/true || die "sandcell run failed"
if has_line sandcell-rootless; then (cd "$TMP" && $ROOTLESS) || die "rootless sandcell run failed (as $BENCH_USER)"; fi

OUT=${OUT:-$BUILD/bench}
mkdir -p "$OUT"
MD=$OUT/startup.md
JSON=$OUT/startup.json

if [ "$HYPERFINE" != 0 ]; then
echo "hyperfine $hf_version, runs=$RUNS warmup=$WARMUP, rootfs=$ROOTFS, sandcell=$SANDCELL_BIN (copied to $SANDCELL)"
hyperfine "${shell_opt[@]}" --warmup "$WARMUP" --runs "$RUNS" \
  --export-markdown "$MD" --export-json "$JSON" \
  -n unshare "$UNSHARE --pid --fork --mount --uts --ipc --net $HOST_TRUE" \
  -n bwrap "$BWRAP --unshare-all --die-with-parent --ro-bind $ROOTFS / --proc /proc --dev /dev /bin/true" \
  -n runc "$RUNC_WRAPPER" \
  -n sandcell "$SANDCELL run --rootfs $ROOTFS -- /bin/true" \
  -n sandcell-rootless "$ROOTLESS" \
  </dev/null

echo
echo "## Markdown ($MD)"
cat "$MD"

echo
echo "## Relative to unshare ($JSON)"
# On a shared VM the neighbours' load drifts during a run; the median and the minimum are less
# moved by it than the mean, so all three are shown and each target is judged on mean and median.
python3 - "$JSON" <<'EOF'
import json, statistics, sys
results = json.load(open(sys.argv[1]))["results"]
by_name = {r["command"]: r for r in results}
def stat(name, key):
    r = by_name[name]
    return statistics.median(r["times"]) if key == "median" else r[key]
print(f"{'command':<18} {'mean ms':>8} {'median':>8} {'min':>8}   x unshare: {'mean':>5} {'median':>6} {'min':>5}")
for r in results:
    n = r["command"]
    vals = [stat(n, k) for k in ("mean", "median", "min")]
    ratios = [stat(n, k) / stat("unshare", k) for k in ("mean", "median", "min")]
    print(f"{n:<18} {vals[0]*1e3:8.2f} {vals[1]*1e3:8.2f} {vals[2]*1e3:8.2f}              "
          f"{ratios[0]:5.2f} {ratios[1]:6.2f} {ratios[2]:5.2f}")
print()
for key in ("mean", "median"):
    sc, base = stat("sandcell", key), stat("unshare", key)
    bwrap, runc = stat("bwrap", key), stat("runc", key)
    checks = [
        ("sandcell <= 1.2x unshare", sc / base <= 1.2, f"{sc / base:.2f}x"),
        ("sandcell faster than bwrap", sc < bwrap, f"bwrap/sandcell = {bwrap / sc:.2f}x"),
        ("sandcell >= 10x faster than runc", runc / sc >= 10, f"runc/sandcell = {runc / sc:.2f}x"),
    ]
    for label, ok, detail in checks:
        print(f"target ({key:<6}) {label:<32} {'met' if ok else 'NOT met':<8} ({detail})")
sc, rootless = stat("sandcell", "median"), stat("sandcell-rootless", "median")
print(f"sandcell-rootless / sandcell (root default), medians = {rootless / sc:.2f}x (+{(rootless - sc) * 1e3:.1f} ms)")
EOF
fi
# ---- interleaved -----------------------------------------------------------------------------------
# hyperfine runs each command's block in turn, and a shared VM drifts between blocks: the bwrap
# verdict above flipped between runs of this script (bench/README.md, session 9). The same six
# commands again, round by round in rotating order (bench/interleave.py); these are the numbers
# to judge the targets on.
echo
echo "## Interleaved ($ROUNDS rounds, $OUT/interleaved.json)"
declare -A line_command=(
  [sandcell]="$SANDCELL run --rootfs $ROOTFS -- /bin/true"
  [unshare]="$UNSHARE --pid --fork --mount --uts --ipc --net $HOST_TRUE"
  [floor-complete]="$(floor_command complete "$ROOTFS")"
  [bwrap]="$BWRAP --unshare-all --die-with-parent --ro-bind $ROOTFS / --proc /proc --dev /dev /bin/true"
  [runc]="${RUNC_WRAPPER:-}"
  [podman]="$PODMAN_RUN"
  [sandcell-nopool]="SANDCELL_NETNS_POOL=0 $SANDCELL run --rootfs $ROOTFS -- /bin/true"
  [sandcell-rootless]="$ROOTLESS"
)
interleaved=()
for name in sandcell unshare $LINES; do
  [ -n "${line_command[$name]+set}" ] || die "LINES: no line called '$name'"
  [[ " ${interleaved[*]} " == *" $name="* ]] && continue  # named twice
  interleaved+=("$name=${line_command[$name]}")
done
python3 "$(dirname "$0")/interleave.py" --rounds "$ROUNDS" --warmup "$WARMUP" --json "$OUT/interleaved.json" \
  "${interleaved[@]}"
python3 - "$OUT/interleaved.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
if not {"bwrap", "runc"} <= set(s):
    sys.exit(0)
sc, unshare, bwrap, runc = (s[n]["median"] for n in ("sandcell", "unshare", "bwrap", "runc"))
bwrap_minus_sc = s["bwrap"]["paired_vs_first"]  # median of per-round bwrap - sandcell
print()
for label, ok, detail in [
    ("sandcell <= 1.2x unshare", sc / unshare <= 1.2, f"{sc / unshare:.2f}x"),
    ("sandcell faster than bwrap", bwrap_minus_sc > 0,
     f"bwrap - sandcell = {bwrap_minus_sc:+.2f} ms per round (median), medians {bwrap / sc:.2f}x"),
    ("sandcell >= 10x faster than runc", runc / sc >= 10, f"runc/sandcell = {runc / sc:.2f}x"),
]:
    print(f"target (interleaved) {label:<32} {'met' if ok else 'NOT met':<8} ({detail})")
nopool = s.get("sandcell-nopool")
if nopool: print(f"sandcell-nopool (no namespace made ahead): median {nopool['median']:.2f} ms, "
      f"{nopool['median'] / unshare:.2f}x unshare, {nopool['paired_vs_first']:+.2f} ms paired vs sandcell")
EOF

echo
echo "results kept in $OUT"
