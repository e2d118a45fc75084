#include "sandcell/apparmor/landlock.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace sandcell::apparmor {
namespace {

// The uapi constants, spelled out here because Debian 12's linux-libc-dev (6.1) stops at ABI 2.
// Values from include/uapi/linux/landlock.h.
constexpr uint64_t kExecute = 1ull << 0, kWriteFile = 1ull << 1, kReadFile = 1ull << 2,
                   kReadDir = 1ull << 3, kRemoveDir = 1ull << 4, kRemoveFile = 1ull << 5,
                   kMakeChar = 1ull << 6, kMakeDir = 1ull << 7, kMakeReg = 1ull << 8,
                   kMakeSock = 1ull << 9, kMakeFifo = 1ull << 10, kMakeBlock = 1ull << 11,
                   kMakeSym = 1ull << 12, kRefer = 1ull << 13, kTruncate = 1ull << 14,
                   kIoctlDev = 1ull << 15;
constexpr uint64_t kBindTcp = 1ull << 0, kConnectTcp = 1ull << 1;
constexpr uint64_t kScopeAbstractUnix = 1ull << 0, kScopeSignal = 1ull << 1;
constexpr int kRulePathBeneath = 1;

struct RulesetAttr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;  // ABI 4
  uint64_t scoped;              // ABI 6
};

struct __attribute__((packed)) PathBeneathAttr {
  uint64_t allowed_access;
  int32_t parent_fd;
};

uint64_t fs_rights_for(int abi) {
  uint64_t rights = (kMakeSym << 1) - 1;  // ABI 1: bits 0..12
  if (abi >= 2) rights |= kRefer;
  if (abi >= 3) rights |= kTruncate;
  if (abi >= 5) rights |= kIoctlDev;
  return rights;
}

int add_path_rule(int ruleset, const char* path, uint64_t access) {
  int fd = open(path, O_PATH | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? 0 : -1;  // an optional writable path the image lacks
  PathBeneathAttr rule{.allowed_access = access, .parent_fd = fd};
  long ret = syscall(SYS_landlock_add_rule, ruleset, kRulePathBeneath, &rule, 0);
  int err = errno;
  close(fd);
  errno = err;
  return ret < 0 ? -1 : 0;
}

int fail(const char** failed_step, const char* step, int ruleset) {
  int err = errno;
  if (ruleset >= 0) close(ruleset);
  *failed_step = step;
  errno = err;
  return -1;
}

}  // namespace

int restrict_with_landlock(const LandlockPlan& plan, const char** failed_step) {
  if (plan.abi <= 0) return 0;
  uint64_t all = fs_rights_for(plan.abi);
  uint64_t read_exec = kExecute | kReadFile | kReadDir;
  RulesetAttr attr{.handled_access_fs = all,
                   .handled_access_net = plan.abi >= 4 && plan.deny_tcp ? (kBindTcp | kConnectTcp) : 0,
                   .scoped = plan.abi >= 6 ? (kScopeAbstractUnix | kScopeSignal) : 0};
  int ruleset = static_cast<int>(syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0));
  if (ruleset < 0) return fail(failed_step, "landlock_create_ruleset", -1);
  if (add_path_rule(ruleset, "/", read_exec) < 0) return fail(failed_step, "landlock rule for /", ruleset);
  // Device nodes are read and written in place (/dev/null, /dev/tty); nothing is created there.
  uint64_t dev = kReadFile | kWriteFile | kReadDir | (plan.abi >= 3 ? kTruncate : 0) | (plan.abi >= 5 ? kIoctlDev : 0);
  if (add_path_rule(ruleset, "/dev", dev) < 0) return fail(failed_step, "landlock rule for /dev", ruleset);
  for (const std::string& path : plan.writable)
    if (add_path_rule(ruleset, path.c_str(), all) < 0)
      return fail(failed_step, "landlock rule for a writable path", ruleset);
  if (syscall(SYS_landlock_restrict_self, ruleset, 0) < 0)
    return fail(failed_step, "landlock_restrict_self", ruleset);
  close(ruleset);
  return 0;
}

}  // namespace sandcell::apparmor
