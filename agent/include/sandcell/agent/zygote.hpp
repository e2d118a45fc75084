#pragma once
// A skill's zygote (docs/architecture.md, "The zygote"): one interpreter per skill with the
// preloads imported, in a sandbox of its own, that forks each pooled program into a sandbox the
// engine made for that program, nested under the zygote's user and pid namespaces
// (runtime::RunOptions::nest_under and outside_program). The pool's members then spend a sandbox
// and a fork before their request instead of an interpreter's start and its imports.
//
// The zygote's sandbox: the skill's image, read-only; no network; a user namespace with its own
// slot of sandcell's id pool and `slots` more, one per nested sandbox at a time (no two of them,
// nor one of them and the zygote, share a host id); CAP_SYS_ADMIN kept in it (to join a nested
// sandbox's pid namespace; the child gets the rest over that sandbox's user namespace, which the
// zygote's owns); no seccomp filter or Landlock domain of its own (the child takes the request's);
// libsandcell-confine.so bound read-only at kZygoteLibraryPath. Its program is the skill's pool
// bootstrap in zygote mode (pool_boot.py's _sandcell_zygote). Nothing of a request runs in it.
//
// The directory the members find it by (0700, under the store): `socket` (SOCK_SEQPACKET, which
// the zygote accepts on), `zygote.json` (its init's pid and the inode numbers of its user and pid
// namespaces, so a member's /proc open cannot reach another process; the host ranges of the
// slots), and `slot-N` lock files (a member holds slot N's flock while its sandbox lives).
#include <functional>
#include <memory>
#include <string>

#include "sandcell/agent/code_runner.hpp"
#include "sandcell/agent/skill.hpp"
#include "sandcell/runtime/sandbox.hpp"

namespace sandcell::agent {

constexpr const char* kZygoteLibraryPath = "/usr/lib/sandcell/libsandcell-confine.so";

// Whether this skill has a zygote mode: its pool bootstrap takes `--zygote` (python's does).
bool skill_has_zygote(const Skill& skill);

// libsandcell-confine.so beside the running executable (the build tree and the install put it
// there), or $SANDCELL_CONFINE_LIBRARY. Throws Error when neither exists.
std::string confine_library_path();

struct ZygoteHooks {
  // Once the zygote waits for requests: its directory (supervisor thread). Must not throw.
  std::function<void(const std::string& dir)> on_ready;
};

// Runs the skill's zygote until `cancel_fd` reads EOF (or fails), or the zygote ends by itself;
// its directory is removed then. Returns the zygote's record (its run ended: how). Throws
// Error::invalid when the skill has no zygote mode or sandboxes get no user namespace of their own.
runtime::Result run_zygote(const SkillCatalog& catalog, const std::string& skill,
                           const RunnerContext& context, uint32_t slots, int cancel_fd,
                           const ZygoteHooks& hooks);

// A pool member's way to its zygote: a slot of the zygote's ids claimed for this member's
// lifetime, the zygote's namespaces (checked against zygote.json's inode numbers), and a
// connection. Throws Error when the zygote is gone or has no free slot.
class ZygoteClient {
 public:
  explicit ZygoteClient(const std::string& dir);
  ~ZygoteClient();
  ZygoteClient(const ZygoteClient&) = delete;
  ZygoteClient& operator=(const ZygoteClient&) = delete;

  // For RunOptions::nest_under and RunOptions::outside_program; valid while this lives.
  const runtime::Nesting* nesting() const;
  const runtime::OutsideProgram* program() const;
  // The zygote ended while the program ran: it gave no wait status (the program was killed with
  // the zygote's pid namespace, which the sandbox is nested in), so the run's outcome is not the
  // program's.
  bool lost() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace sandcell::agent
