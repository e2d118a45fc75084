#!/usr/bin/env bash
# CI's VM stage (scripts/test.sh runs it in the background, in a process group of its own): variant
# A's `ci` set (pure cgroup v2 + AppArmor, tests/vm/guest-init as PID 1), then variant B (the same
# guest with systemd as PID 1: delegated user subtrees), one guest after the other on one emulated
# CPU (SANDCELL_VM_CPUS, default 1) so the host's own tests keep the other core. Exits non-zero
# when either fails; each prints its whole console.
set -u
cd "$(dirname "$0")/../.."
export SANDCELL_VM_CPUS=${SANDCELL_VM_CPUS:-1}
status=0
echo "== tests/vm/ci.sh: variant A, ci set ($(date +%T))"
bash tests/vm/run.sh --timeout 2400 -- sh tests/vm/variant-a-guest.sh ci || {
  echo "== tests/vm/ci.sh: variant A failed (exit $?)"
  status=1
}
echo "== tests/vm/ci.sh: variant B, systemd ($(date +%T))"
bash tests/vm/run.sh --init systemd --timeout 1200 -- sh tests/vm/variant-b-guest.sh || {
  echo "== tests/vm/ci.sh: variant B failed (exit $?)"
  status=1
}
echo "== tests/vm/ci.sh: done ($(date +%T))"
exit $status
