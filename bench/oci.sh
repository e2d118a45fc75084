#!/usr/bin/env bash
# Benchmark (not a test): the OCI lifecycle as podman/containerd drive it, step by step, for
# sandcell-oci and runc on the same bundle, in one run (interleaved: each round runs every runtime
# once, so both see the same machine state):
#   create   RT create --bundle B ID      (the container's init waits, `sleep 1000`)
#   start    RT start ID
#   exec     RT exec ID /bin/true         (a second process joins the running container)
#   kill     RT kill ID KILL
#   delete   RT delete --force ID
#
# Usage: sudo bench/oci.sh [BUILD_DIR]
#   BUILD_DIR  build tree with cli/sandcell-oci and test-rootfs (default: $BUILD or build/default)
# Environment:
#   ROUNDS   rounds (default 30)
#   OTHER    another sandcell-oci binary to measure in the same run (e.g. an older build), named
#            "sandcell-oci (OTHER)" in the table
# Prints per step the median and minimum in ms for each runtime, and runc's median / sandcell-oci's.
set -euo pipefail

die() {
  echo "bench/oci.sh: error: $*" >&2
  exit 1
}

BUILD=${1:-${BUILD:-build/default}}
ROUNDS=${ROUNDS:-30}
[ "$(id -u)" -eq 0 ] || die "must run as root (both runtimes make cgroups and namespaces): sudo $0 $*"
[[ $ROUNDS =~ ^[0-9]+$ && $ROUNDS -ge 1 ]] || die "ROUNDS must be a positive integer (got '$ROUNDS')"
command -v runc >/dev/null || die "runc not found (scripts/install-deps.sh installs it)"
command -v python3 >/dev/null || die "python3 not found"
SANDCELL_OCI=$BUILD/cli/sandcell-oci
ROOTFS=$BUILD/test-rootfs
[ -x "$SANDCELL_OCI" ] || die "$SANDCELL_OCI not found: cmake --build $BUILD --target sandcell-oci"
[ -d "$ROOTFS" ] || die "$ROOTFS not found: cmake --build $BUILD --target test-rootfs"
if [ -n "${OTHER:-}" ]; then [ -x "$OTHER" ] || die "OTHER=$OTHER is not an executable"; fi

TMP=$(mktemp -d /tmp/sandcell-bench-oci.XXXXXX)
cleanup() {
  # Any container a failed step left behind, in each runtime's own state root.
  for rt in runc sandcell other; do
    [ -d "$TMP/state-$rt" ] || continue
    bin=$(cat "$TMP/bin-$rt")
    for id in $("$bin" --root "$TMP/state-$rt" list -q 2>/dev/null); do
      "$bin" --root "$TMP/state-$rt" delete --force "$id" >/dev/null 2>&1 || true
    done
  done
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# runc's default spec (pid, net, ipc, uts, mount, cgroup namespaces; masked paths), on the busybox
# rootfs read-only, running a process that waits to be killed.
mkdir -p "$TMP/bundle"
(cd "$TMP/bundle" && runc spec)
python3 - "$TMP/bundle/config.json" "$(realpath "$ROOTFS")" <<'EOF'
import json, sys
path, rootfs = sys.argv[1], sys.argv[2]
spec = json.load(open(path))
spec["process"]["args"] = ["/bin/sleep", "1000"]
spec["process"]["terminal"] = False
spec["root"] = {"path": rootfs, "readonly": True}
json.dump(spec, open(path, "w"), indent=2)
EOF

echo "$(command -v runc)" >"$TMP/bin-runc"
realpath "$SANDCELL_OCI" >"$TMP/bin-sandcell"
[ -n "${OTHER:-}" ] && realpath "$OTHER" >"$TMP/bin-other"
mkdir -p "$TMP/state-runc" "$TMP/state-sandcell"
[ -n "${OTHER:-}" ] && mkdir -p "$TMP/state-other"

echo "runc: $(runc --version | head -1); sandcell-oci: $(realpath "$SANDCELL_OCI")${OTHER:+; other: $OTHER}; rounds=$ROUNDS"
python3 - "$TMP" "$ROUNDS" <<'EOF'
import os, statistics, subprocess, sys, time
tmp, rounds = sys.argv[1], int(sys.argv[2])
names = {"runc": "runc", "sandcell": "sandcell-oci", "other": "sandcell-oci (OTHER)"}
runtimes = [rt for rt in ("runc", "sandcell", "other") if os.path.exists(f"{tmp}/bin-{rt}")]
binary = {rt: open(f"{tmp}/bin-{rt}").read().strip() for rt in runtimes}
steps = ["create", "start", "exec", "kill", "delete"]
times = {rt: {s: [] for s in steps} for rt in runtimes}

def step(rt, args):
    cmd = [binary[rt], "--root", f"{tmp}/state-{rt}"] + args
    # stderr goes to a file, not a pipe: the container's process inherits it and would keep a
    # pipe open until it is killed.
    with open(f"{tmp}/stderr", "w+") as err:
        t0 = time.perf_counter()
        r = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        elapsed = time.perf_counter() - t0
        if r.returncode != 0:
            err.seek(0)
            sys.exit(f"bench/oci.sh: {' '.join(cmd)} failed ({r.returncode}): {err.read()}")
    return elapsed

for i in range(rounds + 2):  # the first two rounds warm caches and are not counted
    for rt in runtimes:
        cid = f"bench-{os.getpid()}-{i}"
        measured = {
            "create": step(rt, ["create", "--bundle", f"{tmp}/bundle", cid]),
            "start": step(rt, ["start", cid]),
            "exec": step(rt, ["exec", cid, "/bin/true"]),
            "kill": step(rt, ["kill", cid, "KILL"]),
            "delete": step(rt, ["delete", "--force", cid]),
        }
        if i >= 2:
            for s, t in measured.items():
                times[rt][s].append(t * 1e3)

header = f"| step | " + " | ".join(f"{names[rt]} median / min [ms]" for rt in runtimes)
header += " | runc / sandcell-oci (medians) |"
print(header)
print("|" + "---|" * (len(runtimes) + 2))
for s in steps + ["total"]:
    def series(rt):
        if s == "total":
            return [sum(v) for v in zip(*(times[rt][x] for x in steps))]
        return times[rt][s]
    med = {rt: statistics.median(series(rt)) for rt in runtimes}
    cells = " | ".join(f"{med[rt]:.2f} / {min(series(rt)):.2f}" for rt in runtimes)
    print(f"| {s} | {cells} | {med['runc'] / med['sandcell']:.2f}x |")
EOF
