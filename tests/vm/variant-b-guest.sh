#!/bin/sh
# Runs inside the variant-B guest (pure cgroup v2, AppArmor, systemd as PID 1 with logind and user
# managers) from the source tree's root; tests/vm/run.sh boots the guest with it:
#   sudo tests/vm/run.sh --init systemd --timeout 1800 -- sh tests/vm/variant-b-guest.sh
# What only a systemd host has: rootless sandcell in a cgroup subtree systemd delegated to the user
# (`systemd-run --user --scope -p Delegate=yes`, below user@1000.service) enforces its limits
# through cgroup v2 — the record says `cgroup-v2`, an allocation past --memory ends `oom` — while
# the same run outside a delegated subtree falls back to rlimits and says so; and root runs beside
# systemd's own tree (cgroups under /sys/fs/cgroup/sandcell, removed at the end); and
# sandcell-oci's systemd cgroup driver (`OciSystemdCgroup.*`: transient scopes through systemd's
# D-Bus API), which only a host with systemd as init can run (the host's CTest set leaves it out).
# SANDCELL_VM_ROOT_FILTER replaces the gtest filter of the root tests.
set -u
. tests/vm/gtest-once-more.sh
tests=build/default/tests/sandcell_integration_tests
sandcell=$PWD/build/default/cli/sandcell
rootfs=$PWD/build/default/test-rootfs
filter=${SANDCELL_VM_ROOT_FILTER:-'Limits.*:CgroupExit.*:CgroupHostV2.*:OciSystemdCgroup.*-Limits.FloodIsOutputLimitAndSupervisorMemoryStaysBounded'}

status=0
failed() {
  echo "== variant B: FAILED: $*"
  status=1
}

state=$(systemctl is-system-running --wait)
echo "== variant B: host: $(uname -r); $(systemctl --version | head -1); system: $state;" \
  "cgroup: $(cat /sys/fs/cgroup/cgroup.controllers); lsm: $(cat /sys/kernel/security/lsm)"
[ "$state" = running ] || systemctl --failed --no-pager

# The user manager of `tester`, as a login would start it (linger: without a login).
loginctl enable-linger tester
uid=$(id -u tester)
for _ in $(seq 120); do
  [ "$(systemctl is-active "user@$uid.service")" = active ] && [ -S "/run/user/$uid/bus" ] && break
  sleep 1
done
systemctl is-active "user@$uid.service" >/dev/null || failed "user@$uid.service did not start"
echo "== variant B: user@$uid.service delegates: $(cat "/sys/fs/cgroup/user.slice/user-$uid.slice/user@$uid.service/cgroup.controllers")"

as_tester() {
  runuser -u tester -- env HOME=/home/tester XDG_RUNTIME_DIR="/run/user/$uid" \
    DBUS_SESSION_BUS_ADDRESS="unix:path=/run/user/$uid/bus" "$@"
}
in_delegated_scope() {
  as_tester systemd-run --user --scope --quiet -p Delegate=yes "$@"
}
# check NAME PYTHON-ASSERTIONS: the record on stdin, `r`.
check() {
  name=$1
  python3 -c "
import json, sys
r = json.load(sys.stdin)
print('$name:', 'status', r['status'], 'enforced', r['enforced'], 'lsm', r['isolation']['lsm'])
$2" || failed "$name"
}

echo "== variant B: rootless in a delegated scope"
in_delegated_scope "$sandcell" run --json --memory 64m --pids 32 --cpus 0.5 --rootfs "$rootfs" \
  -- /bin/sh -c 'cat /proc/self/cgroup; id -u' | check "delegated scope" "
assert r['status'] == 'ok', r['status']
assert r['isolation']['rootless'] is True
assert r['isolation']['cgroup'] == 'v2', r['isolation']['cgroup']
for limit in ('memory_bytes', 'pids', 'cpus'):
    assert r['enforced'][limit] == 'cgroup-v2', (limit, r['enforced'])
assert r['stdout'].endswith('\n0\n'), r['stdout']"

echo "== variant B: rootless memory bomb in a delegated scope"
in_delegated_scope "$sandcell" run --json --memory 32m --rootfs "$rootfs" -- /bin/tail /dev/zero |
  check "delegated oom" "
assert r['status'] == 'oom', r['status']
assert r['enforced']['memory_bytes'] == 'cgroup-v2', r['enforced']"

echo "== variant B: rootless outside a delegated subtree"
as_tester "$sandcell" run --json --memory 64m --rootfs "$rootfs" -- /bin/true | check "no delegation" "
assert r['status'] == 'ok', r['status']
assert r['enforced']['memory_bytes'] == 'rlimit', r['enforced']"

echo "== variant B: the delegated scopes are gone"
leftover=$(find "/sys/fs/cgroup/user.slice/user-$uid.slice/user@$uid.service" -name 'run-*.scope' -type d)
[ -z "$leftover" ] || failed "scopes left: $leftover"

echo "== variant B: as root: $filter"
gtest_once_more "variant B" "$tests" "$filter" || failed "integration tests as root"
[ ! -d /sys/fs/cgroup/sandcell ] || [ -z "$(find /sys/fs/cgroup/sandcell -mindepth 1 -type d)" ] ||
  failed "cgroups left under /sys/fs/cgroup/sandcell"
left=$(systemctl list-units --all --no-legend --plain 'sandcell-test-*' 'sandcell-oci-*' 'cri-sandcell-*' 'kubepods*' 'sctest*' | head)
[ -z "$left" ] || failed "units left by sandcell-oci --systemd-cgroup: $left"

echo "== variant B: $([ $status -eq 0 ] && echo passed || echo FAILED)"
exit $status
