#pragma once
// Run state under the state root: the shared scratch mount point (<state_root>/scratch) and, only
// for runs that need one, a directory of the run's own (<state_root>/<run id>/) for its network's
// files and state.json, which records the cgroups a rootless run owns so `sandcell gc` can clean
// up after a supervisor that was killed. gc finds root's cgroups by their names alone.
//
// Why a run makes no directory unless it must: the state root may be a disk file system (on our CI
// VM /run is ext4 mounted with `discard`), where removing a directory frees a block and waits
// for its discard: ~0.5 ms per directory per run, for state nobody reads after a clean exit.
#include <sys/types.h>

#include <string>
#include <vector>

namespace sandcell::runtime {

std::string default_state_root();

// "<supervisor pid>-<8 random hex digits>": gc can tell from the name alone whether the
// supervisor that made a cgroup is still alive.
std::string new_run_id();

// The pid in a run id, or -1 if the name is not a run id.
pid_t supervisor_of_run_id(const std::string& run_id);

// True when `pid` is alive and is a sandcell supervisor (its exe's name starts with sandcell).
bool supervisor_alive(pid_t pid);

// The directory every run's child mounts its scratch tmpfs on, inside its own mount namespace: one
// for all runs, as a mount point is only a name there. gc leaves it alone.
std::string scratch_mount_point(const std::string& state_root);
constexpr const char* kScratchDir = "scratch";  // under the state root

class RunState {
 public:
  // Makes the state root and the scratch mount point if missing; no directory for the run yet.
  RunState(const std::string& state_root, const std::string& run_id);
  // Removes the run's directory, if it made one.
  ~RunState();
  RunState(const RunState&) = delete;
  RunState& operator=(const RunState&) = delete;

  // <state_root>/<run id>, made on first use.
  const std::string& dir();
  // Rootless runs: atomically (temp + rename) writes state.json naming the cgroups, which live in
  // the user's delegated subtree where gc does not search. Root's cgroups are below the
  // `sandcell` parents that gc scans for run-id names, so nothing is written for them.
  void record(pid_t child, const std::vector<std::string>& cgroup_paths);

 private:
  std::string dir_;
  bool made_ = false;
};

// Removes a state directory that no live process uses.
void remove_state_dir(const std::string& dir);

}  // namespace sandcell::runtime
