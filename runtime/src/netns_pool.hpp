#pragma once
// Network namespaces made ahead of time for `--net none` runs as root without a user namespace.
//
// A new network namespace is the costliest step of a sandbox's start (~0.45 ms on our CI VM:
// every pernet subsystem of the kernel initialises), and the child takes it first, before its
// mounts. So each run leaves one unused namespace behind for the next: made by the supervisor
// after "go", while the program runs, with its `lo` up, and kept alive by a bind mount of its
// nsfs file. The next run's child enters it with setns() (~25 us) instead of making its own.
//
// Layout, under <state root>/netns/ (a directory of its own per entry, because a mount
// point cannot be renamed but its directory can):
//   ready-<run id>/ns   an unused namespace, made by that run
//   taken-<run id>/ns   the namespace that run took; never returned to the pool
//   new-<run id>/ns     being made
// A run claims an entry by renaming ready-X to taken-<its id> (rename is atomic: one winner) and
// checks that the file it opens is a network namespace; anything else (an entry gc emptied in
// between, a stray file) and the child makes its own namespace as before. A taken namespace has
// been the sandbox's (with --cap-add NET_ADMIN its program may have changed it), so its entry is
// unmounted after "go" and the directory is reused for the next namespace: on a disk state root
// (/run is ext4 on our CI VM) removing a directory waits for a discard, ~0.5 ms.
//
// Not used with a user namespace (--userns=auto, rootless): setns() into a namespace owned by
// the host's user namespace needs CAP_SYS_ADMIN there, and so would mounting its sysfs.
// The pool never grows past what concurrent runs leave: a run adds one only when it found none
// besides its own. `sandcell gc` removes all of it; a supervisor killed with SIGKILL leaves its
// taken-/new- entry to gc. SANDCELL_NETNS_POOL=0 turns it off.
#include <string>
#include <vector>

namespace sandcell::runtime {

constexpr const char* kNetnsPoolDir = "netns";  // under the state root

// False when SANDCELL_NETNS_POOL=0: such a run neither takes nor leaves a namespace (a host that
// must hold nothing of sandcell between runs).
bool netns_pool_enabled();

class NetnsClaim {
 public:
  // Takes an unused namespace from the pool, if it has one.
  NetnsClaim(const std::string& state_root, const std::string& run_id);
  // Unmounts the taken entry if replace() did not run (the run failed before "go").
  ~NetnsClaim();
  NetnsClaim(const NetnsClaim&) = delete;
  NetnsClaim& operator=(const NetnsClaim&) = delete;

  // The taken namespace (O_CLOEXEC; the child inherits it through clone3), or -1: none.
  int fd() const { return fd_; }
  // After "go": lets the taken namespace go and, when the pool had no other, makes one for the
  // next run. Failures only mean the next run makes its own; nothing is reported.
  void replace();

 private:
  void release();

  std::string pool_, run_id_, taken_;
  int fd_ = -1;
  bool others_ = false;  // the pool held another ready entry besides the one taken
};

// `sandcell gc`: unmounts and removes every ready entry, and the taken and new entries of runs
// that are not live (is_live(run id) false). Returns one line per entry removed.
std::vector<std::string> collect_netns_pool(const std::string& state_root,
                                            bool (*is_live)(const std::string& run_id));

}  // namespace sandcell::runtime
