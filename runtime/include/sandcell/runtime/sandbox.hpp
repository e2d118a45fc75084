#pragma once
// run_sandbox(): the isolation engine. Creates the cgroup, clones the child into fresh
// namespaces, runs the child-side checklist (runtime/src/child_setup.cpp), supervises
// deadlines and output, kills the whole tree, cleans up and returns the Result.
#include <sys/types.h>

#include <array>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "sandcell/base/unique_fd.hpp"
#include "sandcell/runtime/result.hpp"
#include "sandcell/runtime/spec.hpp"

namespace sandcell::runtime {

enum class Stream { Stdout, Stderr };

// Where the program's output goes. Called on the supervisor thread with at most the capped
// number of bytes per stream; the supervisor keeps draining (and counting) beyond the cap.
using OutputSink = std::function<void(Stream, std::span<const char>)>;

// A pooled run (docs/architecture.md, "The warm pool"): the program starts at once and waits on
// its stdin for a request; the run's clock starts at the hand-over. What the request decides of
// the supervisor's limits (the memory and pids limits are the cgroup's, set before).
struct HandOverTerms {
  std::optional<double> wall_s;
  std::optional<double> cpu_s;
  std::optional<uint64_t> output_bytes;
};
// A pooled program may end its run before its exit: once its output is written it sends the
// sandbox's init (pid 1) kProgramDoneSignal by sigqueue(3), its exit status (0-255) as the
// value, and waits instead of exiting. The supervisor then freezes the sandbox's cgroup, takes
// the record with that status as if the program had exited (whatever else runs in the sandbox
// is stopped there, as the init would end it), hands it to RunOptions::on_result, and only then
// kills the sandbox: the exit, which tears the program's address space down at ~0.1 ms per
// resident MB here (~3 ms for a python3 with numpy), is no longer on the way to the answer.
// The init honours the signal from the program's process only, once, and only in a pooled run
// whose cgroup can be frozen (then /proc/1/status shows it caught: the program can tell whether
// to wait). Where the freeze does not complete in time the sandbox is killed and the record
// waits for its end, with the same status. A program gains nothing by it: it could exit with
// that status anyway.
inline constexpr int kProgramDoneSignal = 64;  // SIGRTMAX

struct HandOver {
  int fd = -1;  // becomes readable (an eventfd, say) when take() has an answer
  // Called once on the supervisor's thread when fd is readable: the request's terms, or nullopt
  // to cancel (the sandbox is killed, the record says interrupted). Must not throw.
  std::function<std::optional<HandOverTerms>()> take;
  // Called right after, once the timers run from now, the CPU baseline is read and the output
  // counters restarted: lets the program go (writes its stdin). Must not throw.
  std::function<void()> go;
};

// What a process made outside the sandbox needs to become its program
// (RunOptions::outside_program): the arguments of sandcell_confine()
// (runtime/confine/sandcell_confine.h). Every fd is the supervisor's, open only during the call.
struct OutsideEntry {
  int pid_namespace_fd = -1;  // the sandbox's: setns(fd, CLONE_NEWPID), then fork
  // The sandbox's other namespaces to join, in sandcell_confine_fds::namespace_fds' order (user,
  // ipc, uts, net, cgroup, mnt), -1 where the sandbox shares the caller's. Namespace fds, not
  // the init's pidfd: setns() on a pidfd needs ptrace access to the init, which is not dumpable.
  std::array<int, 6> namespace_fds{-1, -1, -1, -1, -1, -1};
  // The run's cgroups (v1: each hierarchy's `tasks`; v2: `cgroup.procs`): the process writes
  // "0" to each before it runs anything of the program's.
  std::span<const int> cgroup_fds;
  std::span<const unsigned char> plan;  // struct sandcell_confine_plan and what follows it
  int stdin_fd = -1, stdout_fd = -1, stderr_fd = -1;
  // The confinement's report socket (SOCK_SEQPACKET): the seccomp listener ('L', SCM_RIGHTS),
  // or a failed step ('E', sandcell_confine_failure), which ends the run as a runtime error.
  int report_fd = -1;
};

// Design B of docs/architecture.md ("A program from outside"): the sandbox is made as for any
// run, up to the init's confinement, but the init starts no program; a process the caller makes
// becomes the program instead (a fork of a skill's zygote). The supervisor watches that process
// as it would the init's child: its exit, the limits, the output, the record.
struct OutsideProgram {
  // Called once on the supervisor's thread when the init is confined and waits: makes the
  // process, in the init's pid namespace (setns(pid_namespace_fd, CLONE_NEWPID), then a fork),
  // which calls sandcell_confine() with `entry` and then runs the program. Returns its pidfd (it is
  // pid 2 of the sandbox: the first process after the init). What it throws ends the run as a
  // runtime error.
  std::function<UniqueFd(const OutsideEntry& entry)> start;
  // Called once, when that pidfd says the process has exited: its wait status. Its parent is
  // the caller's (the caller's own child, or the zygote's), so the caller reaps it. It blocks
  // the supervisor's loop, so it must come at once (the process has exited). Must not throw.
  std::function<int()> wait_status;
};

// Design B of docs/architecture.md, step 3: the sandbox's user and pid namespaces are made as
// children of a zygote's (U_Z, P_Z), so that the zygote, which holds capabilities in U_Z, may
// join the sandbox and fork into it (RunOptions::outside_program). Everything else is as in any
// run with a user namespace of its own (Spec::user_namespace Auto, which it needs); its init is
// still the supervisor's child.
struct Nesting {
  int userns_fd = -1;  // U_Z (/proc/PID/ns/user of a process in it); its ids 0 must be mapped
  int pidns_fd = -1;   // P_Z
  // The sandbox's ids 0..size-1 map to ids base..base+size-1 of U_Z, uids and gids alike: a
  // range of its own, not U_Z's root (the program's ids must not be the zygote's).
  uint32_t base = 0, size = 65536;
  UsernsMapping host;  // the same ids as the host sees them: for the record (Isolation::userns)
};

// A uid_map takes 340 lines; a zygote's pool needs far fewer.
constexpr uint32_t kMaxExtraUsernsSlots = 128;

struct RunOptions {
  OutputSink output;        // required
  int stdin_fd = 0;         // passed to the program as its fd 0; -1 gives it /dev/null
  std::string state_root;   // per-run state; empty: /run/sandcell
  // Called once, on the supervisor's thread, when the sandbox's init exists and before it runs
  // anything of the caller's: its pid and the run's cgroup directories, what exec_in_sandbox()
  // joins. Must not throw.
  std::function<void(pid_t init, const std::vector<std::string>& cgroup_paths)> on_started;
  // Set: a pooled run (HandOver). The output before the hand-over still reaches `output` but is
  // not counted; wall_ms, cpu_ms and the wall, CPU-time and output limits count from it, and the
  // record's limits are the terms'. Unset: a cold run, unchanged.
  const HandOver* hand_over = nullptr;
  // Called at most once, on the supervisor's thread, with the record complete and nothing of the
  // program left (its cgroup emptied and removed), before the rest of the teardown: the init's
  // exit, the network's and the run state's removal (~10 ms on our CI VM). Whoever is waiting for
  // the record can have it before that. A pooled program that said it was done
  // (kProgramDoneSignal) is still there, frozen: nothing of it can run, and it is killed and
  // removed right after. Not called for a run that ends in an exception. Must not throw.
  std::function<void(const Result&)> on_result;
  // v1: also make a freezer cgroup for the run (listed in on_started's paths), so the caller
  // can pause the sandbox (the Docker API's pause). v2's directory always has cgroup.freeze.
  bool freezer = false;
  // Set: the program runs on a pseudo-terminal of the sandbox's own devpts instance (stdin,
  // stdout, stderr and its controlling terminal, in a session of its own), as Docker's Tty.
  // The master is handed over here, once, on the supervisor's thread, before the program
  // starts; no process of the sandbox keeps it. What the program writes then reaches the master
  // and not `output`, and `stdin_fd` is not used (write its input to the master). Must not throw.
  std::function<void(UniqueFd master)> on_terminal;
  // Required by a spec with a BindMount::late: makes those sources (or waits for them). Called
  // once, on the supervisor's thread; what it throws ends the run as a runtime error, the child
  // killed.
  std::function<void()> before_binds;
  // Set: the program comes from outside (OutsideProgram); the spec's args are not run. Not with
  // a terminal, an AppArmor profile (the confinement library has no AppArmor step yet), or an
  // allow network (its proxy environment is the program's to take).
  const OutsideProgram* outside_program = nullptr;
  // Set: the sandbox's user and pid namespaces are nested under a zygote's (Nesting).
  const Nesting* nest_under = nullptr;
  // With a user namespace of its own (Spec::user_namespace Auto, not nest_under): this many more
  // slots of sandcell's id pool are claimed for the run and mapped after its own, extra slot i
  // (from 1) at the sandbox's ids i*65536..i*65536+65535. A zygote's sandbox: each sandbox
  // nested under it takes one of them (Nesting::base), so that no two of them, and none of them
  // and the zygote, share a host id.
  uint32_t extra_userns_slots = 0;  // at most kMaxExtraUsernsSlots
  // Called once, on the supervisor's thread, before the clone, with the host ranges of every
  // slot mapped: the run's own first, then the extra ones. Must not throw.
  std::function<void(const std::vector<UsernsMapping>& slots)> on_userns;
};

// The command line of the process that runs sandboxes, main()'s own argc and argv (unchanged),
// which every sandbox's init overwrites so the program cannot read it from /proc/1/cmdline. Call
// it once, first thing; without it the init finds the strings through /proc/self/stat instead.
void note_command_line(int argc, char** argv);

// Never throws for problems of the run itself: those become Status::RuntimeError with
// Result::error set. Throws Error only for invalid specs (Error::input_error()), and what
// spec.seccomp's function throws (a bad profile file), once the run is cleaned up: it is called
// while the child sets up its mounts (a cached profile costs ~0.2 ms to read and check, a start
// is ~5 ms), and the program reaches the child with "go".
Result run_sandbox(const Spec& spec, const RunOptions& options);

// A further process in a running sandbox (the Docker API's exec): who it is and its stdio.
struct SandboxProcess {
  std::vector<std::string> args, env;
  std::string cwd = "/";
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
  int stdin_fd = -1, stdout_fd = 1, stderr_fd = 2;  // stdin -1: /dev/null
  // The three fds are a pty's slave: it becomes the process's controlling terminal (its own
  // session, TIOCSCTTY), as Docker's exec Tty.
  bool terminal = false;
};
// The sandbox, as RunOptions::on_started reported it.
struct SandboxTarget {
  pid_t init_pid = 0;
  pid_t supervisor_pid = 0;  // set: the init must still be its child (a reused pid is refused)
  std::vector<std::string> cgroup_paths;
};
// Runs `process` in the sandbox that run_sandbox(spec, ...) made and still runs: joins its
// init's namespaces and the run's cgroups, then takes the confinement the sandbox's program took,
// from the same plan (rlimits, bounding set, capabilities, no_new_privs, AppArmor or Landlock,
// seccomp: spec.seccomp, its function called here). Returns its pid, a child of
// the caller, once it has exec'd; throws Error naming the step otherwise.
pid_t exec_in_sandbox(const Spec& spec, const SandboxProcess& process, const SandboxTarget& target);
// The root directory of that sandbox as its processes see it (O_PATH), once its init has taken
// its confinement (before that it may still be the host's): for the caller's own openat2() with
// RESOLVE_IN_ROOT (the Docker API's archive). Throws Error when the sandbox is gone.
UniqueFd open_sandbox_root(const Spec& spec, const SandboxTarget& target);

// Removes what crashed runs left: cgroups under the sandcell parents whose supervisor is gone,
// and their state directories. Returns one line per thing removed.
std::vector<std::string> collect_garbage(const std::string& state_root);

}  // namespace sandcell::runtime
