#pragma once
// Installing a compiled seccomp program in a test's child, and the raw calls the filter tests
// make (tests/unit/seccomp_test.cpp, seccomp_profile_test.cpp).
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandcell/runtime/spec.hpp"

namespace sandcell::test {

// A child's exit code for "the filter could not be installed" (not a test result).
constexpr int kInstallFailed = 200;
// x32 system calls are the x86_64 numbers with this bit set.
constexpr unsigned long kX32SyscallBit = 0x40000000;

// no_new_privs, then the program: what seccomp(2) returned (a listener fd with
// SECCOMP_FILTER_FLAG_NEW_LISTENER), or -1.
inline long install(const runtime::SeccompProgram& program) {
  sock_fprog fprog{.len = static_cast<unsigned short>(program.instructions.size()),
                   .filter = const_cast<sock_filter*>(program.instructions.data())};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
  return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, program.flags, &fprog);
}

// getpid through the i386 entry point (int 0x80), which a filter for x86_64 must refuse.
inline long i386_getpid() {
  long ret = 20;  // __NR_getpid in the i386 table
  __asm__ volatile("int $0x80" : "+a"(ret) : : "r8", "r9", "r10", "r11", "memory");
  return ret;
}

}  // namespace sandcell::test
