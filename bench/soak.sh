#!/usr/bin/env bash
# bench/soak.sh [RUNS] [KILLS] [NET_RUNS]
# The full soak (CI runs a short version: the Soak.* tests in tests/hostile/soak_test.cpp):
#   1. RUNS (1000) sequential runs in one long-lived supervisor process (run_sandbox in a loop):
#      its fd count and RSS must end where they started;
#   2. KILLS (100) `sandcell run`s SIGKILLed at random moments, then `sandcell gc`;
#   3. NET_RUNS (50) `sandcell run --net allow:...` runs (veth, nft table, proxy), one after another;
# then checks the host: zero sandcell mounts, cgroups, netns, veths, nft tables and processes.
# Needs root and a built `default` preset. Run it on a quiet host: it counts host-wide state.
#
# Example: bench/soak.sh            # the full soak, ~5-10 minutes
#          bench/soak.sh 200 20 10  # a quicker one
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-1000}
kills=${2:-100}
net_runs=${3:-50}
build=build/default
sandcell=$build/cli/sandcell
tests=$build/tests/sandcell_integration_tests
rootfs=$build/test-rootfs
for f in "$sandcell" "$tests" "$rootfs/bin/sc-probe"; do
  [ -e "$f" ] || { echo "soak: $f missing: cmake --build --preset default first" >&2; exit 1; }
done
[ "$(id -u)" -eq 0 ] || { echo "soak: must run as root" >&2; exit 1; }

# One line per kind of thing sandcell creates on the host, with how many exist now.
host_state() {
  echo "mounts $(grep -c -e '/run/sandcell/' -e ' sandcell-' /proc/self/mountinfo || true)"
  echo "cgroups $(find /sys/fs/cgroup -mindepth 2 -maxdepth 2 -path '*/sandcell/*' -type d 2>/dev/null | wc -l)"
  echo "veths $(ip -o link show 2>/dev/null | grep -c ': sc-' || true)"
  echo "netns $(ip netns list 2>/dev/null | grep -c sandcell || true)"
  echo "nft_tables $(nft list tables 2>/dev/null | grep -c sandcell || true)"
  echo "processes $(pgrep -c -f '^/bin/sc-probe' || true)"
  echo "run_states $(find /run/sandcell -mindepth 1 -maxdepth 1 ! -name scratch ! -name netns 2>/dev/null | wc -l)"
  echo "netns_pool $(find /run/sandcell/netns -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)"
}

# A run as root leaves one network namespace made ahead for the next (runtime/src/netns_pool.hpp);
# gc empties that pool here as it does at the end, so before and after differ only by what the
# soak itself left behind.
"$sandcell" gc >/dev/null
before=$(host_state)
echo "== host before"; echo "$before"
start=$(date +%s)

echo "== $runs runs in one supervisor, then $kills SIGKILLed supervisors and gc"
SANDCELL_SOAK_RUNS=$runs SANDCELL_SOAK_KILLS=$kills "$tests" --gtest_filter='Soak.*' \
  --gtest_output=json:/tmp/sandcell-soak-$$.json
grep -o '"rss_growth_kib": "[0-9-]*"' /tmp/sandcell-soak-$$.json || true
rm -f /tmp/sandcell-soak-$$.json

echo "== $net_runs runs with --net allow (veth, nft table, proxy)"
for i in $(seq "$net_runs"); do
  "$sandcell" run --rootfs "$rootfs" --net allow:allowed.test -- /bin/true \
    || { echo "soak: network run $i failed" >&2; exit 1; }
done
"$sandcell" gc >/dev/null

after=$(host_state)
echo "== host after ($(( $(date +%s) - start )) s)"; echo "$after"
if [ "$before" != "$after" ]; then
  echo "soak: the host changed:" >&2
  diff <(echo "$before") <(echo "$after") >&2 || true
  exit 1
fi
echo "soak: ok"
