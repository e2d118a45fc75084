#pragma once
// What the host's Linux security modules offer, for the result record and for choosing a layer.
#include <string>

namespace sandcell::apparmor {

struct LsmHost {
  bool apparmor = false;  // /sys/kernel/security/apparmor exists and is enabled
  int landlock_abi = 0;   // 0: Landlock unavailable
};

LsmHost probe_lsm();

}  // namespace sandcell::apparmor
