// The name → number table is glibc's own (strerrorname_np), so it matches this kernel's ABI
// without a hand-copied list.
#include "errno_names.hpp"

#include <cerrno>
#include <cstring>
#include <map>

namespace sandcell::seccomp {
namespace {

constexpr int kMaxErrno = 4095;  // the kernel's MAX_ERRNO

const std::map<std::string, int>& errno_table() {
  static const std::map<std::string, int> table = [] {
    std::map<std::string, int> names;
    for (int value = 1; value <= kMaxErrno; ++value) {
      // Aliases (EWOULDBLOCK = EAGAIN, EDEADLOCK = EDEADLK) share a number; glibc names one.
      if (const char* name = strerrorname_np(value); name != nullptr) names.emplace(name, value);
    }
    names.emplace("EWOULDBLOCK", EWOULDBLOCK);
    names.emplace("EDEADLOCK", EDEADLOCK);
    names.emplace("ENOTSUP", ENOTSUP);
    return names;
  }();
  return table;
}

}  // namespace

std::optional<int> errno_from_name(const std::string& name) {
  const auto it = errno_table().find(name);
  if (it == errno_table().end()) return std::nullopt;
  return it->second;
}

}  // namespace sandcell::seccomp
