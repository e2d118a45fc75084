#pragma once
// Syscall names and numbers as libseccomp knows them, for the filter's native architecture.
#include <cstdint>
#include <string>

namespace sandcell::seccomp {

// The native number of `name`, or -1 if this architecture has no such syscall (profiles list
// the syscalls of every architecture) or libseccomp only has a pseudo-number for it.
int native_syscall_number(const std::string& name);

// AUDIT_ARCH_* of the native architecture (libseccomp's SCMP_ARCH_* tokens are those values).
uint32_t native_audit_arch();

// The name of a call as the supervisor reports it: "keyctl" for the native ABI, "x32:getpid"
// and "i386:getpid" for the foreign ABIs of x86_64, "syscall_<nr>" when unknown.
std::string syscall_name(uint32_t arch, uint64_t nr);

}  // namespace sandcell::seccomp
