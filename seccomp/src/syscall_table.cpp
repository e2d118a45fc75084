// Resolving syscall names with libseccomp's tables, which follow the kernel's per-ABI numbering.
#include "syscall_table.hpp"

#include <linux/audit.h>
#include <seccomp.h>

#include <cstdlib>
#include <memory>

namespace sandcell::seccomp {
namespace {

// x32 calls enter through the x86_64 syscall path and are told apart only by this bit of the
// number (__X32_SYSCALL_BIT), so they arrive with arch AUDIT_ARCH_X86_64.
constexpr uint64_t kX32SyscallBit = 0x40000000;

std::string resolve(uint32_t arch, uint64_t nr) {
  if (nr > INT32_MAX) return {};
  const std::unique_ptr<char, decltype(&std::free)> name(
      seccomp_syscall_resolve_num_arch(arch, static_cast<int>(nr)), &std::free);
  return name ? std::string(name.get()) : std::string();
}

std::string prefixed(const std::string& prefix, const std::string& name, uint64_t nr) {
  return prefix + (name.empty() ? "syscall_" + std::to_string(nr) : name);
}

}  // namespace

int native_syscall_number(const std::string& name) {
  return seccomp_syscall_resolve_name_arch(SCMP_ARCH_NATIVE, name.c_str());
}

uint32_t native_audit_arch() {
  return seccomp_arch_native();
}

std::string syscall_name(uint32_t arch, uint64_t nr) {
  if (arch == AUDIT_ARCH_X86_64 && (nr & kX32SyscallBit) != 0) {
    return prefixed("x32:", resolve(SCMP_ARCH_X32, nr), nr);
  }
  if (arch == AUDIT_ARCH_I386 && arch != native_audit_arch()) {
    return prefixed("i386:", resolve(SCMP_ARCH_X86, nr), nr);
  }
  return prefixed("", arch == native_audit_arch() ? resolve(arch, nr) : std::string(), nr);
}

}  // namespace sandcell::seccomp
