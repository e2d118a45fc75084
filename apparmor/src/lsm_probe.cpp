#include "sandcell/apparmor/lsm_probe.hpp"

#include <linux/landlock.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>

namespace sandcell::apparmor {

static bool apparmor_enabled() {
  std::ifstream enabled("/sys/module/apparmor/parameters/enabled");
  std::string value;
  return enabled && (enabled >> value) && value == "Y" &&
         access("/sys/kernel/security/apparmor", F_OK) == 0;
}

static int landlock_abi_version() {
  // landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) returns the highest ABI.
  long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return abi < 0 ? 0 : static_cast<int>(abi);
}

LsmHost probe_lsm() { return {.apparmor = apparmor_enabled(), .landlock_abi = landlock_abi_version()}; }

}  // namespace sandcell::apparmor
