#!/bin/sh
# Runs inside the variant-A guest (pure cgroup v2, AppArmor enforcing, no systemd) from the
# source tree's root; tests/vm/run.sh boots the guest with it:
#   sudo tests/vm/run.sh --timeout 3000 -- sh tests/vm/variant-a-guest.sh [ci|full]
#
#   full  every integration suite that touches cgroups, LSMs, user namespaces or networking, the
#         hostile suite and sandcell-oci under podman (148 tests, ~9 min on 2 emulated CPUs)
#   ci    the set CI runs (scripts/test.sh, tests/vm/ci.sh): `full` without three costly tests
#         that no cgroup layout or LSM changes (the host runs them), on one emulated CPU beside
#         the host's own tests
#
# The integration tests run as root (the Rootless.* ones make their own unprivileged users);
# sandcell itself is then run as the guest's user `tester`, and with Debian's
# kernel.unprivileged_userns_clone=0. SANDCELL_VM_ROOT_FILTER replaces the set's gtest filter.
set -u
. tests/vm/gtest-once-more.sh
set_name=${1:-full}
tests=build/default/tests/sandcell_integration_tests
sandcell=$PWD/build/default/cli/sandcell
rootfs=$PWD/build/default/test-rootfs

case $set_name in
ci | full)
  # Every integration suite that touches cgroups, LSMs, user namespaces or networking, the
  # hostile suite, and sandcell-oci under podman.
  filter='Limits.*:CgroupExit.*:CgroupProbe.*:CgroupHostV2.*:CgroupHostGc.*:Isolation.*:Supervisor.*:Userns.*'
  filter="$filter:UsernsHostile.*:Confinement.*:Landlock.*:LateSeccomp.*:HostileResources.*:HostileNamespaces.*"
  filter="$filter:HostilePrivilege.*:NetworkPolicy.*:OciLifecycle.*:OciPodman.*:Rootless.*"
  # A pooled program's word (v2's cgroup.freeze; AppArmor's signal rule for it to the init).
  filter="$filter:ProgramDone.*"
  if [ "$set_name" = ci ]; then
    # CI's set leaves out three tests that no cgroup layout or LSM changes and that cost the most
    # under emulation on one CPU beside the host's tests: 256 MiB of output, and two races of the
    # init and the supervisor repeated 40 and 20 times (39 s and 23 s of session 30's 184 s set).
    # The host runs them in every CI run, twice (default and ASan); `full` runs them here.
    filter="$filter-Limits.FloodIsOutputLimitAndSupervisorMemoryStaysBounded"
    filter="$filter:Isolation.ProgramNeverSeesSandcellsCommandLineEvenAsItsFirstRead"
    filter="$filter:Limits.OutputPastTheLimitJustBeforeTheExitIsStillOutputLimit"
  fi
  ;;
*)
  echo "variant-a-guest.sh: unknown set '$set_name' (ci or full)" >&2
  exit 2
  ;;
esac
filter=${SANDCELL_VM_ROOT_FILTER:-$filter}

status=0
failed() {
  echo "== variant A: FAILED: $*"
  status=1
}

echo "== variant A ($set_name): host: $(uname -r); cgroup: $(cat /sys/fs/cgroup/cgroup.controllers);" \
  "lsm: $(cat /sys/kernel/security/lsm)"
echo "== variant A: as root: $filter"
gtest_once_more "variant A" "$tests" "$filter" || failed "integration tests as root"

# sandcell as an unprivileged user: its own user namespace, limits by rlimit (no systemd here to
# delegate a cgroup subtree), Landlock (a rootless process can neither load nor list AppArmor
# profiles).
echo "== variant A: sandcell as tester"
record=$(runuser -u tester -- env HOME=/home/tester "$sandcell" run --json --memory 64m --pids 32 \
  --rootfs "$rootfs" -- /bin/sh -c 'cat /proc/self/attr/current; id -u') || failed "rootless run"
printf "%s\n" "$record" | python3 -c '
import json, sys
r = json.load(sys.stdin)
print("rootless:", r["isolation"].get("rootless"), "enforced:", r["enforced"], "lsm:", r["isolation"]["lsm"])
assert r["status"] == "ok", r["status"]
assert r["isolation"].get("rootless") is True
assert r["enforced"]["memory_bytes"] == "rlimit", r["enforced"]
assert r["isolation"]["lsm"].startswith("landlock:abi"), r["isolation"]["lsm"]
assert r["stdout"].endswith("\n0\n"), r["stdout"]
' || failed "the rootless record"

# Debian's switch for unprivileged user namespaces: rootless sandcell stops with exit 125 and
# names the sysctl and its fix; root is not affected.
echo "== variant A: kernel.unprivileged_userns_clone=0"
switch=/proc/sys/kernel/unprivileged_userns_clone
if [ ! -e $switch ]; then
  failed "this kernel has no $switch"
else
  echo 0 >$switch
  # timeout: a helper that kept its copy of a pipe's write end once hung here for ever.
  timeout 300 runuser -u tester -- env HOME=/home/tester "$sandcell" run --rootfs "$rootfs" -- /bin/true 2>/tmp/err
  code=$?
  cat /tmp/err
  [ $code -eq 125 ] || failed "rootless run with the switch off: exit $code, not 125"
  grep -q 'sysctl -w kernel.unprivileged_userns_clone=1' /tmp/err || failed "the error does not name the sysctl's fix"
  "$sandcell" run --rootfs "$rootfs" -- /bin/true || failed "a root run with the switch off"
  "$sandcell" run --userns auto --rootfs "$rootfs" -- /bin/true || failed "a root --userns auto run with the switch off"
  echo 1 >$switch
fi

echo "== variant A ($set_name): $([ $status -eq 0 ] && echo passed || echo FAILED)"
exit $status
