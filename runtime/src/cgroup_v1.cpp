#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string_view>
#include <utility>

#include "cgroup_files.hpp"
#include "cgroup_versions.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::runtime {
namespace {

// A freezer that never reaches FROZEN (a task stuck in the kernel) must not hang teardown.
constexpr std::chrono::milliseconds kV1FreezeLimit{1000};

}  // namespace

CgroupV1::CgroupV1(const std::map<std::string, std::string>& controller_mounts,
                   const std::string& run_id, CgroupNeeds needs) {
  cgroupfs::check_run_id(run_id);
  try {
    for (const std::string_view controller : kV1ControllersOfARun) {
      const auto mount = controller_mounts.find(std::string(controller));
      if (mount == controller_mounts.end()) continue;
      const std::string dir = mount->second + "/" + kCgroupParent + "/" + run_id;
      const bool made = std::find(dirs_.begin(), dirs_.end(), dir) != dirs_.end();
      const std::string_view name = controller;
      // Not needed: left out, unless co-mounted with one that is ("cpu,cpuacct"): free then.
      if (!made &&
          ((name == "freezer" && !needs.freezer) || (name == "cpuacct" && !needs.cpu_usage)))
        continue;
      if (!made) {
        cgroupfs::make_dir(mount->second + "/" + kCgroupParent);
        cgroupfs::make_dir(dir);
        dirs_.push_back(dir);
      }
      dir_of_[std::string(controller)] = dir;
    }
  } catch (...) {
    // The destructor does not run for a half-built object; undo the directories made so far.
    std::vector<std::string> made(dirs_.rbegin(), dirs_.rend());
    try {
      cgroupfs::kill_and_remove(made);
    } catch (...) {
      // The creation error is the one worth reporting.
    }
    throw;
  }
}

CgroupV1::~CgroupV1() {
  try {
    remove();
  } catch (...) {
    // A destructor must not throw; `sandcell gc` removes what is left from the run state.
  }
}

std::string CgroupV1::file(const std::string& controller, const char* name) const {
  const auto dir = dir_of_.find(controller);
  // "" names no file: reads of it find nothing, exists() is false.
  return dir == dir_of_.end() ? std::string() : dir->second + "/" + name;
}

std::map<std::string, Enforcement> CgroupV1::apply(const Limits& limits) {
  std::map<std::string, Enforcement> enforced;
  if (limits.memory_bytes && apply_memory(*limits.memory_bytes)) {
    enforced["memory_bytes"] = Enforcement::CgroupV1;
  }
  const std::string pids_max = file("pids", "pids.max");
  if (limits.pids && cgroupfs::exists(pids_max)) {
    cgroupfs::write(pids_max, std::to_string(*limits.pids));
    enforced["pids"] = Enforcement::CgroupV1;
    pids_limited_ = true;
  }
  if (limits.cpus && apply_cpus(*limits.cpus)) enforced["cpus"] = Enforcement::CgroupV1;
  const std::string shares = file("cpu", "cpu.shares");
  if (limits.cpu_shares && cgroupfs::exists(shares)) {
    cgroupfs::write(shares, std::to_string(*limits.cpu_shares));
    enforced["cpu_shares"] = Enforcement::CgroupV1;
  }
  return enforced;
}

bool CgroupV1::apply_memory(uint64_t bytes) {
  const std::string limit = file("memory", "memory.limit_in_bytes");
  if (!cgroupfs::exists(limit)) return false;
  const std::string memsw = file("memory", "memory.memsw.limit_in_bytes");
  const std::string value = std::to_string(bytes);
  // memsw (memory + swap) set to the same value means no swap. The kernel keeps
  // limit_in_bytes <= memsw.limit_in_bytes at every step (EINVAL otherwise), so on a raise memsw
  // goes first and on a lowering it goes second.
  const bool has_memsw = cgroupfs::exists(memsw);
  const bool raising = cgroupfs::single_value(limit).value_or(0) < bytes;
  if (has_memsw && raising) cgroupfs::write(memsw, value);
  cgroupfs::write(limit, value);
  if (has_memsw && !raising) cgroupfs::write(memsw, value);
  const std::string swappiness = file("memory", "memory.swappiness");
  if (cgroupfs::exists(swappiness)) {
    try {
      cgroupfs::write(swappiness, "0");
    } catch (const Error&) {
      // Only a preference (memsw already caps swap, or there is no swap to cap); some kernels
      // refuse it on non-root cgroups.
    }
  }
  return true;
}

bool CgroupV1::apply_cpus(double cpus) {
  const std::string quota = file("cpu", "cpu.cfs_quota_us");
  if (!cgroupfs::exists(quota)) return false;
  // The period is set explicitly so the quota means what v2's "<quota> 100000" means.
  cgroupfs::write(file("cpu", "cpu.cfs_period_us"), std::to_string(kCpuPeriodUs));
  cgroupfs::write(quota, std::to_string(cpu_quota_us(cpus)));
  return true;
}

void CgroupV1::add_process(pid_t pid) {
  for (const auto& dir : dirs_) cgroupfs::write(dir + "/cgroup.procs", std::to_string(pid));
}

std::vector<UniqueFd> CgroupV1::open_self_attach_files() const {
  std::vector<UniqueFd> fds;
  for (const auto& dir : dirs_) {
    UniqueFd fd(open((dir + "/tasks").c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd) throw Error(errno, "open " + dir + "/tasks");
    fds.push_back(std::move(fd));
  }
  return fds;
}

std::vector<UniqueFd> CgroupV1::open_parent_attach_files() const {
  std::vector<UniqueFd> fds;
  for (const auto& dir : dirs_) {
    const std::string tasks = dir.substr(0, dir.rfind('/')) + "/tasks";  // <mount>/sandcell/tasks
    UniqueFd fd(open(tasks.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd) throw Error(errno, "open " + tasks);
    fds.push_back(std::move(fd));
  }
  return fds;
}

UniqueFd CgroupV1::open_pids_limit() const {
  if (!pids_limited_) return {};
  const std::string pids_max = file("pids", "pids.max");
  UniqueFd fd(open(pids_max.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd) throw Error(errno, "open " + pids_max);
  return fd;
}

CgroupUsage CgroupV1::usage() const {
  return {
      .cpu_ns = cgroupfs::single_value(file("cpuacct", "cpuacct.usage")).value_or(0),
      .peak_memory_bytes =
          cgroupfs::single_value(file("memory", "memory.max_usage_in_bytes")).value_or(0),
      .oom_kills = cgroupfs::keyed_value(file("memory", "memory.oom_control"), "oom_kill"),
      .pids_limit_hits = cgroupfs::keyed_value(file("pids", "pids.events"), "max"),
  };
}

bool CgroupV1::freeze(const char* state) {
  const std::string path = file("freezer", "freezer.state");
  if (!cgroupfs::exists(path)) return false;
  cgroupfs::write(path, state);
  const std::string wanted = std::string(state) + "\n";
  cgroupfs::wait_until([&] { return cgroupfs::read_if_exists(path).value_or(wanted) == wanted; },
                       kV1FreezeLimit);
  return true;
}

uint64_t CgroupV1::cpu_ns() const {
  return cgroupfs::single_value(file("cpuacct", "cpuacct.usage")).value_or(0);
}

bool CgroupV1::freeze_within(std::chrono::microseconds limit) {
  if (removed_) return false;
  const std::string path = file("freezer", "freezer.state");
  if (path.empty() || !cgroupfs::exists(path)) return false;
  cgroupfs::write(path, "FROZEN");
  return cgroupfs::wait_closely(
      [&] { return cgroupfs::read_if_exists(path).value_or("") == "FROZEN\n"; }, limit);
}

void CgroupV1::kill_all() {
  if (removed_) return;
  // v1 has no cgroup.kill. Frozen tasks cannot fork, so one pass over cgroup.procs sees every
  // process; the SIGKILL stays pending while frozen and takes effect on THAWED.
  std::vector<std::string> all;
  for (const auto& dir : dirs_) {
    auto tree = cgroupfs::tree_bottom_up(dir);
    all.insert(all.end(), tree.begin(), tree.end());
  }
  // The common case at the end of a run: pid 1 is gone and the kernel already killed its pid
  // namespace. Nobody left to fork, so no freeze (each state change costs a round of waiting).
  bool empty = true;
  for (const auto& dir : all) empty = empty && cgroupfs::procs(dir).empty();
  if (empty) return;
  const bool frozen = freeze("FROZEN");
  cgroupfs::kill_procs(all);
  if (frozen) freeze("THAWED");
}

bool CgroupV1::remove_if_empty() {
  if (!removed_ && cgroupfs::remove_if_empty({dirs_.rbegin(), dirs_.rend()})) removed_ = true;
  return removed_;
}

void CgroupV1::remove() {
  if (remove_if_empty()) return;
  kill_all();
  // Only the run directories and what the sandbox may have made below them; never the parent.
  std::vector<std::string> all;
  for (auto dir = dirs_.rbegin(); dir != dirs_.rend(); ++dir) {
    auto tree = cgroupfs::tree_bottom_up(*dir);
    all.insert(all.end(), tree.begin(), tree.end());
  }
  cgroupfs::kill_and_remove(all);
  removed_ = true;
}

std::vector<std::string> CgroupV1::paths() const {
  return dirs_;
}

}  // namespace sandcell::runtime
