#pragma once
// A seccomp profile: what to do with each syscall, independent of libseccomp. The built-in
// profile of `sandcell run` and (later) Docker/OCI JSON profiles are both expressed in it, and
// compile() turns either into the BPF program the runtime installs in the child.
#include <cstdint>
#include <string>
#include <vector>

#include "sandcell/runtime/spec.hpp"

namespace sandcell::seccomp {

enum class ActionKind { Allow, Errno, KillProcess, KillThread, Trap, Log, Notify };

struct Action {
  ActionKind kind = ActionKind::Allow;
  int errno_ret = 0;  // only for ActionKind::Errno
};

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
};

// The filter of `sandcell run`: allow by default, deny the syscalls that reach kernel attack
// surface or host-global state a sandboxed program has no business with.
Profile builtin_profile();

// Compiles for the native architecture only; a syscall made through any other ABI (i386 via
// int $0x80, x32) kills the process. Throws sandcell::Error naming the rule that failed.
runtime::SeccompProgram compile(const Profile& profile);

}  // namespace sandcell::seccomp
