#pragma once
// A seccomp profile: what to do with each syscall, independent of libseccomp. The built-in
// profile of `sandcell run` and (later) Docker/OCI JSON profiles are both expressed in it, and
// compile() turns either into the BPF program the runtime installs in the child.
#include <cstdint>
#include <string>
#include <vector>

#include "sandcell/seccomp/program.hpp"

namespace sandcell::seccomp {

enum class ActionKind { Allow, Errno, KillProcess, KillThread, Trap, Log, Notify };

struct Action {
  ActionKind kind = ActionKind::Allow;
  int errno_ret = 0;  // only for ActionKind::Errno
};

// Equal when the kernel answers alike: the errno counts only for Errno.
inline bool operator==(const Action& a, const Action& b) {
  return a.kind == b.kind && (a.kind != ActionKind::Errno || a.errno_ret == b.errno_ret);
}

// One comparison of a syscall argument, as in the OCI spec's seccomp "args".
struct ArgCondition {
  enum class Op { NotEqual, Less, LessEqual, Equal, GreaterEqual, Greater, MaskedEqual };

  unsigned index = 0;  // 0..5
  Op op = Op::Equal;
  uint64_t value = 0;      // for MaskedEqual: the mask
  uint64_t value_two = 0;  // for MaskedEqual: the value (arg & mask) must equal
};

// Applies `action` to each syscall in `names` when every condition in `args` holds. Names the
// kernel of this architecture does not have are skipped, as Docker does.
struct Rule {
  std::vector<std::string> names{};
  Action action{};
  std::vector<ArgCondition> args{};
};

struct Profile {
  std::string name{};
  Action default_action{};
  std::vector<Rule> rules{};
  // What a call through another ABI (i386 via int $0x80, x32 numbers) gets: the filter knows
  // only native numbers, so such a call is never judged by the rules. true: the sandbox is
  // killed; false: the call fails with the default errno. Loaded profiles set it from
  // "sandcellForeignAbi"; the built-in profile keeps the strict default.
  bool kill_foreign_abi = true;
};

// The filter of `sandcell run`: allow by default, deny the syscalls that reach kernel attack
// surface or host-global state a sandboxed program has no business with.
Profile builtin_profile();

struct CompileOptions {
  // Denials go to the supervisor (SECCOMP_RET_USER_NOTIF) to be counted by name and answered
  // with the profile's errno; program.notify says how. Needs a supervisor reading the listener
  // fd: a notifying call blocks until it is answered or the listener is closed (then ENOSYS).
  bool report_denials = true;
};

// Compiles for the native architecture only; a syscall made through any other ABI (i386 via
// int $0x80, x32) is killed or denied as profile.kill_foreign_abi says, and reported with
// report_denials. Throws sandcell::Error naming the rule that failed.
Program compile(const Profile& profile, const CompileOptions& options);

// Without a supervisor: denials are plain SECCOMP_RET_ERRNO, nothing is reported.
Program compile(const Profile& profile);

}  // namespace sandcell::seccomp
