#pragma once
// A compiled seccomp program: what this library's compiler makes and the runtime installs in the
// sandbox child, and where a sandbox gets it from (Source, runtime::Spec::seccomp). Plain data, no
// libseccomp: the runtime uses this header and none of the compiler.
#include <linux/filter.h>

#include <cerrno>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sandcell::seccomp {

// How the supervisor answers a filter's SECCOMP_RET_USER_NOTIF: each denied call is counted by
// name in the result record (events.denied_syscalls) and answered with an errno, so the program
// sees the same failure a plain SECCOMP_RET_ERRNO would give. If the supervisor is gone, the
// kernel fails the call with ENOSYS: the sandbox never gains the syscall.
struct NotifyPlan {
  int default_errno = EPERM;             // for calls the filter's default action denied
  std::map<uint64_t, int> errno_for;     // key (arch << 32 | nr) → errno of the rule that denies it
  // A call through another ABI (i386 via int $0x80, x32 numbers) is recorded, then the whole
  // sandbox is killed when this is set (answered with default_errno otherwise).
  bool kill_on_foreign_abi = false;
  uint32_t native_arch = 0;              // AUDIT_ARCH_* of the filter's native architecture
  std::function<std::string(uint32_t arch, uint64_t nr)> name_of;  // "keyctl", "i386:getpid"
};

// A seccomp BPF program, compiled in the parent (with libseccomp, src/compile.cpp) so the child
// only has to install it.
struct Program {
  std::string name;  // reported in the result record, e.g. "builtin"
  std::vector<sock_filter> instructions;
  unsigned int flags = 0;  // SECCOMP_FILTER_FLAG_*; NEW_LISTENER when `notify` is set
  std::optional<NotifyPlan> notify;
};

// Where a sandbox's program comes from (runtime::Spec::seccomp): nothing (unconfined), a program
// compiled already, or a function that compiles one (cached_profile() in compiled_cache.hpp),
// called when the program is needed: run_sandbox() calls it while the sandbox's child sets up its
// mounts, off the start's critical path; a container and an exec'd process before their clone
// (docs/architecture.md, "seccomp").
class Source {
 public:
  using Compile = std::function<std::optional<Program>()>;
  Source() = default;
  Source(std::nullopt_t) {}  // NOLINT(google-explicit-constructor): as an optional's nullopt
  Source(Program program) : program_(std::move(program)) {}  // NOLINT(google-explicit-constructor)
  Source(std::optional<Program> program) : program_(std::move(program)) {}  // NOLINT(google-explicit-constructor)
  explicit Source(Compile compile) : compile_(std::move(compile)) {}

  // The program (nullopt: unconfined): the one given, or what the function makes, each time it is
  // asked. Throws what the function throws (an unreadable or bad profile file).
  std::optional<Program> program() const { return compile_ ? compile_() : program_; }

 private:
  std::optional<Program> program_;
  Compile compile_;
};

}  // namespace sandcell::seccomp
