#!/usr/bin/env bash
# What the denied-syscall report costs. sandcell answers denied calls in the supervisor
# (SECCOMP_RET_USER_NOTIF) so it can count them; allowed calls never leave the kernel, so a
# syscall-heavy program that is never denied must cost the same with and without the report.
#
#   bench/seccomp_notify.sh [BUILD]     (root; BUILD defaults to build/default)
#
# Prints ns per call measured inside the sandbox by the probe (tests/fixtures/sc-probe.c):
#   getppid (allowed)  under: unconfined, default + report, default without report
#   keyctl  (denied)   under: default + report, default without report
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-${BUILD:-build/default}}
SANDCELL=$BUILD/cli/sandcell
ROOTFS=$BUILD/test-rootfs
ALLOWED_CALLS=${ALLOWED_CALLS:-2000000}
DENIED_CALLS=${DENIED_CALLS:-200000}
[ "$(id -u)" -eq 0 ] || { echo "seccomp_notify.sh: run as root" >&2; exit 1; }
[ -x "$SANDCELL" ] && [ -x "$ROOTFS/bin/sc-probe" ] || { echo "build first: cmake --build --preset default" >&2; exit 1; }

# Median of 5 runs of the probe's own ns/call figure.
measure() {
  local flags=$1 call=$2 count=$3
  for _ in 1 2 3 4 5; do
    # shellcheck disable=SC2086
    "$SANDCELL" run --rootfs "$ROOTFS" $flags -- /bin/sc-probe syscall-loop "$call" "$count" |
      sed -n 's/.*: \([0-9]*\) ns\/call/\1/p'
  done | sort -n | sed -n 3p
}

allowed_unconfined=$(measure "--seccomp unconfined" getppid "$ALLOWED_CALLS")
allowed_report=$(measure "--seccomp default" getppid "$ALLOWED_CALLS")
allowed_plain=$(measure "--seccomp default --no-denial-report" getppid "$ALLOWED_CALLS")
denied_report=$(measure "--seccomp default" keyctl "$DENIED_CALLS")
denied_plain=$(measure "--seccomp default --no-denial-report" keyctl "$DENIED_CALLS")

python3 - "$allowed_unconfined" "$allowed_report" "$allowed_plain" "$denied_report" "$denied_plain" <<'PY'
import sys
au, ar, ap, dr, dp = (int(x) for x in sys.argv[1:])
print("| workload | profile | ns/call | vs. reference |")
print("|---|---|---:|---:|")
print(f"| getppid, allowed | unconfined | {au} | 1.00 (reference) |")
print(f"| getppid, allowed | default, no report | {ap} | {ap/au:.2f} |")
print(f"| getppid, allowed | default + report | {ar} | {ar/au:.2f} |")
print(f"| keyctl, denied | default, no report | {dp} | 1.00 (reference) |")
print(f"| keyctl, denied | default + report | {dr} | {dr/dp:.2f} |")
print()
print(f"report overhead on allowed calls: {ar - ap:+d} ns/call ({(ar - ap) / ap * 100:+.1f}%)")
print(f"report cost per denied call: {dr - dp:+d} ns (a supervisor round trip)")
PY
