#!/bin/sh
# Runs inside the variant-A guest (pure cgroup v2, AppArmor enforcing, no systemd) from the
# source tree's root: the integration and hostile tests that touch cgroups, LSMs, user namespaces
# and networking, as root; then the rootless ones as the unprivileged user `tester`.
# tests/vm/variant-a.sh boots the guest with this script.
tests=build/default/tests/sandcell_integration_tests
root_filter=${SANDCELL_VM_ROOT_FILTER:-'Limits.*:CgroupExit.*:CgroupProbe.*:CgroupHostV2.*:CgroupHostGc.*:Isolation.*:Supervisor.*:Userns.*:UsernsHostile.*:Confinement.*:Landlock.*:LateSeccomp.*:HostileResources.*:HostileNamespaces.*:HostilePrivilege.*:NetworkPolicy.*:OciLifecycle.*'}
rootless_filter=${SANDCELL_VM_ROOTLESS_FILTER:-'Rootless.*'}

status=0
echo "== variant A: as root: $root_filter"
"$tests" --gtest_brief=1 --gtest_filter="$root_filter" || status=1
echo "== variant A: as tester: $rootless_filter"
runuser -u tester -- env HOME=/home/tester "$tests" --gtest_brief=1 --gtest_filter="$rootless_filter" ||
  status=1
exit $status
