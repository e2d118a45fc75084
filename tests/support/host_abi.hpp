#pragma once
// Whether this kernel runs i386 system calls (int $0x80) for 64-bit programs at all.
//
// Kernels built with CONFIG_IA32_EMULATION_DEFAULT_DISABLED, or booted with ia32_emulation=0,
// answer int $0x80 with a general protection fault: the process dies by SIGSEGV before seccomp
// ever sees the call, so a test that a filter refuses the i386 ABI has nothing to test there.
// x32 is different: its calls enter through `syscall` with bit 30 set, and seccomp filters them
// before the kernel's table would answer ENOSYS, so x32 tests hold on every x86_64 kernel.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "seccomp_install.hpp"

namespace sandcell::test {

// Probed once per test binary in a forked child, so the probe's own SIGSEGV is its answer.
inline bool kernel_runs_i386_calls() {
  static const bool runs = [] {
    const pid_t pid = fork();
    if (pid < 0) return false;
    if (pid == 0) _exit(i386_getpid() == getpid() ? 0 : 1);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
      if (errno != EINTR) return false;
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }();
  return runs;
}

inline constexpr const char* kNoI386Reason =
    "this kernel runs without IA32 emulation (int $0x80 faults with SIGSEGV before seccomp "
    "sees it; ia32_emulation=0 or CONFIG_IA32_EMULATION_DEFAULT_DISABLED)";

}  // namespace sandcell::test
