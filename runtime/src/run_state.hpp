#pragma once
// The per-run state directory (<state_root>/<run id>/): the scratch mount point and state.json,
// which records who supervises the run and which cgroups it owns, so `sandcell gc` can clean up
// after a supervisor that was killed.
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

class RunState {
 public:
  RunState(const std::string& state_root, const std::string& run_id);
  ~RunState();
  RunState(const RunState&) = delete;
  RunState& operator=(const RunState&) = delete;

  const std::string& dir() const { return dir_; }
  std::string scratch_dir() const { return dir_ + "/scratch"; }
  // Atomically (temp + rename) writes state.json.
  void record(pid_t child, const std::vector<std::string>& cgroup_paths) const;

 private:
  std::string dir_;
};

// Removes a state directory that no live process uses.
void remove_state_dir(const std::string& dir);

}  // namespace sandcell::runtime
