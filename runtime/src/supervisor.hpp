#pragma once
// The supervisor loop: waits for the program while enforcing the wall deadline, the CPU-time
// limit (polling the cgroup's usage), the output caps and interrupts of sandcell itself; kills
// the whole tree when one fires; reaps the program and drains its output.
#include <sys/resource.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "child_plan.hpp"
#include "output_pump.hpp"
#include "sandcell/runtime/cgroup.hpp"

namespace sandcell::runtime {

// A program from outside (RunOptions::outside_program), once made.
struct OutsideStarted {
  UniqueFd pidfd;
  pid_t pid_in_sandbox = 0;  // for the init (program_done_signal)
  UniqueFd report;           // sandcell_confine()'s report socket: the listener, or a failure
};

struct Supervised {
  pid_t pid;  // pid 1 of the sandbox's pid namespace
  int pidfd;
  OutputPump& out;
  OutputPump& err;
  Cgroup& cgroup;
  const Limits& limits;
  int signal_fd;  // signalfd for SIGINT/SIGTERM/SIGHUP sent to sandcell
  int sync_fd;    // parent end of the sync socket: setup failures, the seccomp listener, EOF
  const SeccompNotifyPlan* notify;  // non-null when the filter reports denials
  // Called once, as soon as the program has exited (the init's report) or the init is reaped,
  // whichever comes first: what the sandbox no longer needs can go while it finishes exiting.
  // `init_left_cgroups`: the init reported that it moved itself out of the run's cgroups (or
  // the run has none).
  std::function<void(bool init_left_cgroups)> on_program_exit = {};
  // Set: a pooled run; the wall and CPU-time timers wait for it (RunOptions::hand_over).
  const HandOver* hand_over = nullptr;
  // RunOptions::outside_program: called when the init says it waits (ChildMessage::
  // AwaitingProgram); makes the program and returns what to watch of it. Its exit (the pidfd
  // readable) then stands for the init's report: its status from outside_wait_status, and the
  // sandbox is ended (the init is killed, and its pid namespace with it).
  std::function<OutsideStarted()> start_outside = {};
  std::function<int()> outside_wait_status = {};
};

struct SupervisionOutcome {
  // The program's, as the sandbox's init reported it; the init's own when it could not report
  // (the sandbox was killed). usage covers everything the init reaped, and the init itself
  // when the supervisor reaped it.
  int wait_status = 0;
  rusage usage{};
  bool wall_timeout = false;
  bool cpu_timeout = false;
  bool output_limit = false;
  int interrupted_by = 0;                     // the signal that interrupted sandcell, if any
  std::optional<ChildMessage> child_failure;  // setup or execve failed
  std::vector<DeniedSyscall> denied_syscalls;
  std::string seccomp_kill;  // why the seccomp report killed the sandbox, if it did
  // The init reported that the program's whole tree is dead and reaped and that it left the
  // run's cgroups (ChildMessage::tree_ended), so supervise() returned without waiting for the
  // init's own exit, which may still be tearing its namespaces down: the caller must reap it
  // (ExitingInit in sandbox.cpp) before it returns, once it has finished the run meanwhile.
  bool init_still_exiting = false;
  // The program said it was done (ChildMessage::ProgramDone) and the sandbox's cgroup is frozen:
  // nothing of it can run, its output is read, wait_status is what the program said. The
  // sandbox and its init are still there: the caller takes the record, then kills the sandbox.
  bool frozen = false;
  // A pooled run that was handed its request: when, the cgroup's CPU time then, and the terms.
  std::optional<std::chrono::steady_clock::time_point> handed_over_at;
  uint64_t cpu_ns_at_hand_over = 0;
  HandOverTerms terms;
};

SupervisionOutcome supervise(const Supervised& run);

// Kills every process of the sandbox: pid 1 of its pid namespace (the kernel then kills the
// rest of the namespace) and, for good measure, everything in its cgroup.
void kill_sandbox(const Supervised& run);

}  // namespace sandcell::runtime
