#pragma once
// Cgroups for one run: v2 when the unified hierarchy has the controllers, v1 on hybrid hosts,
// none otherwise. sandcell only creates and removes cgroups below its own `sandcell` parent.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sandcell/base/unique_fd.hpp"
#include "sandcell/runtime/result.hpp"
#include "sandcell/runtime/spec.hpp"

namespace sandcell::runtime {

inline constexpr const char* kCgroupParent = "sandcell";

// What the host offers, read once from /proc/self/mountinfo and the unified root.
struct CgroupHost {
  enum class Mode { V2, V1, None };
  Mode mode = Mode::None;
  std::string v2_root;                          // unified mount point, if any
  std::map<std::string, std::string> v1_roots;  // controller ("memory") → its mount point
};

// Reads the mount table (a file in /proc/self/mountinfo format) and picks the mode: v2 when the
// unified root's cgroup.controllers lists memory, pids and cpu; else v1 when memory and pids are
// mounted as v1 hierarchies; else none.
CgroupHost probe_cgroups(const std::string& mountinfo_path = "/proc/self/mountinfo");

// The same answer for the layouts systemd makes, found with statfs instead of the mount table
// (reading /proc/self/mountinfo costs 50-90 us here, on the way to every run; this ~25 us):
// `base` is a cgroup2 mount with memory, pids and cpu (unified), or a tmpfs holding one cgroup
// mount per v1 hierarchy, each named by its controllers ("memory", "cpu,cpuacct"; the symlinks
// "cpu" and "cpuacct" beside it are aliases), plus "systemd" and, on hybrid hosts, "unified"
// (cgroup2). nullopt for anything else, or any doubt: then ask probe_cgroups().
std::optional<CgroupHost> probe_standard_cgroups(const std::string& base = "/sys/fs/cgroup");

struct CgroupUsage {
  uint64_t cpu_ns = 0;
  uint64_t peak_memory_bytes = 0;
  uint64_t oom_kills = 0;        // processes the OOM killer killed in this cgroup
  uint64_t pids_limit_hits = 0;  // forks refused by the pids limit
};

class Cgroup {
 public:
  virtual ~Cgroup() = default;
  virtual CgroupHost::Mode mode() const = 0;
  // Writes the limits it can enforce; returns, per limit name of Limits ("memory_bytes", "pids",
  // "cpus"), the mechanism that enforces it. Limits it cannot enforce are left out.
  virtual std::map<std::string, Enforcement> apply(const Limits& limits) = 0;
  // v2: an O_DIRECTORY fd for clone3(CLONE_INTO_CGROUP); -1 when not supported.
  virtual int clone_into_fd() const { return -1; }
  virtual void add_process(pid_t pid) = 0;
  // v1: the `tasks` file of each hierarchy, opened for writing, for a single-threaded child to
  // write "0" into itself. A thread that moves itself skips the write side of the kernel's
  // cgroup_threadgroup_rwsem and the RCU grace period it waits for (~12 ms on this VM per
  // cgroup.procs write of another pid). Empty where the version has nothing of the kind.
  virtual std::vector<UniqueFd> open_self_attach_files() const { return {}; }
  // v1: the same for the `sandcell` parent of each hierarchy, in the same order: a sandbox's
  // init moves itself out with them once its program runs, so the run's cgroups hold only the
  // program's processes and are empty (and removed) while the init is still tearing its
  // namespaces down (~0.3 ms of expedited RCU grace periods here). Empty where the version has
  // nothing of the kind.
  virtual std::vector<UniqueFd> open_parent_attach_files() const { return {}; }
  // v1: the run's `pids.max`, opened for reading and writing, when apply() set a pids limit:
  // the sandbox's init, in the cgroup when it starts its program and so counted by the limit
  // (sandbox.cpp sets one more for it), lowers it by that one before it leaves. Invalid
  // otherwise.
  virtual UniqueFd open_pids_limit() const { return {}; }
  virtual CgroupUsage usage() const = 0;
  // usage().cpu_ns alone: one file read instead of four (the hand-over's baseline and the CPU-time
  // limit's poll need nothing else).
  virtual uint64_t cpu_ns() const { return usage().cpu_ns; }
  // Freezes every process in the cgroup where it is (v2 cgroup.freeze, v1's freezer when the
  // cgroup has one) and waits at most `limit` for all of them to be frozen: true when they are.
  // False when there is no freezer, or a task did not freeze in time (one in the kernel's
  // uninterruptible sleep): the cgroup is then left freezing, and kill_all() ends it. A task
  // blocked in sleep, futex or sigwait freezes at once; one in read or select is woken first
  // (~0.15 ms here, a few ms at worst). No thaw: kill_all() and remove() follow.
  virtual bool freeze_within(std::chrono::microseconds limit) {
    (void)limit;
    return false;
  }
  // SIGKILLs every process in the cgroup (cgroup.kill on v2, freezer + kill on v1).
  virtual void kill_all() = 0;
  // kill_all(), waits until empty (bounded), removes the directories. Idempotent.
  virtual void remove() = 0;
  // Removes the directories if nothing is left in them, without killing or waiting; true once
  // they are gone (remove() then has nothing to do). A busy cgroup stays as it was.
  virtual bool remove_if_empty() = 0;
  // Keeps the directories when this object goes away: an OCI container's cgroup outlives
  // `create` and is removed by `delete`.
  virtual void release() = 0;
  // Directories of this cgroup (one per v1 hierarchy); the run state records them for gc.
  virtual std::vector<std::string> paths() const = 0;
};

// The v1 hierarchies a cgroup needs besides memory, pids and cpu (v2 has all in one directory).
// Each v1 cgroup made and removed costs a run ~0.1 ms, and as much again in the kernel's deferred
// work (bench/README.md, floor.sh). A sandbox's pid namespace already ends the whole tree when
// its init dies, so it needs no freezer. It does need cpuacct: rusage misses the CPU time of the
// processes the kernel kills with the namespace (the dying init ignores SIGCHLD, so they are
// reaped without being counted).
struct CgroupNeeds {
  bool freezer = true;    // kill_all() without a window for forks (no pid namespace to rely on)
  bool cpu_usage = true;  // cpuacct: usage().cpu_ns
};

// Docker's and the OCI spec's cpu shares (2..262144, v1 cpu.shares) as v2's cpu.weight
// (1..10000), runc's conversion (libcontainer/cgroups/utils.go): 1 + ((shares - 2) * 9999) /
// 262142. 0 stays 0 ("not set"); anything else is clamped to 2..262144 first.
uint64_t cpu_shares_to_weight(uint64_t shares);

// Creates <root>/sandcell/<run_id> in each hierarchy the mode uses (the parent too, if missing).
std::unique_ptr<Cgroup> create_cgroup(const CgroupHost& host, const std::string& run_id,
                                      CgroupNeeds needs = {});

// For tests and gc: a v2 cgroup below an explicit root directory (a real unified mount or a fake
// cgroupfs directory).
std::unique_ptr<Cgroup> create_cgroup_v2(const std::string& root, const std::string& run_id);

// For gc: kill what remains in a cgroup directory (any version) and remove it. Returns false if
// it could not be removed.
bool remove_cgroup_dir(const std::string& path);

}  // namespace sandcell::runtime
