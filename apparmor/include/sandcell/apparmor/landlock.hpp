#pragma once
// Landlock, the LSM layer where the host has no AppArmor: the root filesystem becomes read and
// execute only, writes are allowed only below the writable paths, TCP bind/connect are denied
// when the network policy is `none` (ABI >= 4), and abstract unix sockets and signals are
// scoped to the sandbox (ABI >= 6). Each feature is applied as far as the host's ABI allows; the
// result record names the ABI, so nothing is silently missing.
#include <string>
#include <vector>

namespace sandcell::apparmor {

struct LandlockPlan {
  int abi = 0;                           // the host's ABI (probe_lsm()); 0: Landlock is skipped
  std::vector<std::string> writable;     // absolute paths inside the sandbox
  bool deny_tcp = false;                 // no TCP bind/connect at all (network policy none)
};

// Runs in the sandbox child after pivot_root and no_new_privs, before seccomp. Makes only
// syscalls (no allocation). Returns 0, or -1 with errno set and *failed_step naming the step.
int restrict_with_landlock(const LandlockPlan& plan, const char** failed_step);

}  // namespace sandcell::apparmor
