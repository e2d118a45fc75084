#pragma once
// run_sandbox(): the isolation engine. Creates the cgroup, clones the child into fresh
// namespaces, runs the child-side checklist (runtime/src/child_setup.cpp), supervises
// deadlines and output, kills the whole tree, cleans up and returns the Result.
#include <functional>
#include <span>
#include <string>

#include "sandcell/runtime/result.hpp"
#include "sandcell/runtime/spec.hpp"

namespace sandcell::runtime {

enum class Stream { Stdout, Stderr };

// Where the program's output goes. Called on the supervisor thread with at most the capped
// number of bytes per stream; the supervisor keeps draining (and counting) beyond the cap.
using OutputSink = std::function<void(Stream, std::span<const char>)>;

struct RunOptions {
  OutputSink output;        // required
  int stdin_fd = 0;         // passed to the program as its fd 0; -1 gives it /dev/null
  std::string state_root;   // per-run state; empty: /run/sandcell
  // The seccomp program, made while the child sets up its mounts rather than before the clone
  // (a cached profile costs ~0.2 ms to read and check, a start is ~5 ms); it reaches the child
  // with "go". Used when set and spec.seccomp is empty; nullopt: unconfined. What it throws (a
  // bad profile file) ends the run, and run_sandbox() throws it once the run is cleaned up.
  std::function<std::optional<SeccompProgram>()> compile_seccomp;
};

// The command line of the process that runs sandboxes, main()'s own argc and argv (unchanged),
// which every sandbox's init overwrites so the program cannot read it from /proc/1/cmdline. Call
// it once, first thing; without it the init finds the strings through /proc/self/stat instead.
void note_command_line(int argc, char** argv);

// Never throws for problems of the run itself: those become Status::RuntimeError with
// Result::error set. Throws Error only for invalid specs (Error::input_error()).
Result run_sandbox(const Spec& spec, const RunOptions& options);

// Removes what crashed runs left: cgroups under the sandcell parents whose supervisor is gone,
// and their state directories. Returns one line per thing removed.
std::vector<std::string> collect_garbage(const std::string& state_root);

}  // namespace sandcell::runtime
