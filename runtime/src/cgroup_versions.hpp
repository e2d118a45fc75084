#pragma once
// The three Cgroup implementations behind create_cgroup(). Internal to the runtime library.
#include <array>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "sandcell/runtime/cgroup.hpp"
#include "unique_fd.hpp"

namespace sandcell::runtime {

// The v1 controllers a run's cgroup uses, in the order CgroupV1 makes their directories: memory,
// pids and cpu limit, cpuacct gives the CPU time, freezer a race-free kill. cpuset is left out on
// purpose: a new v1 cpuset cgroup has empty cpuset.cpus/mems and refuses tasks until they are
// filled. freezer comes first so paths() lists it first: gc removes directories in that order,
// and thawing a frozen leftover there is what lets its pending SIGKILLs empty the other
// hierarchies. The cgroup probe statfs-checks the hierarchies of these (cgroup_probe.cpp).
inline constexpr std::array<std::string_view, 5> kV1ControllersOfARun = {"freezer", "memory",
                                                                         "pids", "cpu", "cpuacct"};

// <root>/sandcell/<run_id> in the unified hierarchy.
class CgroupV2 final : public Cgroup {
 public:
  CgroupV2(const std::string& root, const std::string& run_id);
  ~CgroupV2() override;
  CgroupHost::Mode mode() const override { return CgroupHost::Mode::V2; }
  std::map<std::string, Enforcement> apply(const Limits& limits) override;
  int clone_into_fd() const override { return dir_fd_.get(); }
  void add_process(pid_t pid) override;
  CgroupUsage usage() const override;
  uint64_t cpu_ns() const override;
  bool freeze_within(std::chrono::microseconds limit) override;
  void kill_all() override;
  void remove() override;
  bool remove_if_empty() override;
  void release() override { removed_ = true; }
  std::vector<std::string> paths() const override;

 private:
  std::string file(const char* name) const { return dir_ + "/" + name; }
  void freeze_and_kill();

  std::string dir_;
  UniqueFd dir_fd_;
  bool removed_ = false;
};

// <mount>/sandcell/<run_id> in each v1 hierarchy sandcell uses (one directory per distinct mount
// point, so co-mounted "cpu,cpuacct" share one).
class CgroupV1 final : public Cgroup {
 public:
  CgroupV1(const std::map<std::string, std::string>& controller_mounts, const std::string& run_id,
           CgroupNeeds needs = {});
  ~CgroupV1() override;
  CgroupHost::Mode mode() const override { return CgroupHost::Mode::V1; }
  std::map<std::string, Enforcement> apply(const Limits& limits) override;
  void add_process(pid_t pid) override;
  std::vector<UniqueFd> open_self_attach_files() const override;
  std::vector<UniqueFd> open_parent_attach_files() const override;
  UniqueFd open_pids_limit() const override;
  CgroupUsage usage() const override;
  uint64_t cpu_ns() const override;
  bool freeze_within(std::chrono::microseconds limit) override;
  void kill_all() override;
  void remove() override;
  bool remove_if_empty() override;
  void release() override { removed_ = true; }
  std::vector<std::string> paths() const override;

 private:
  // "<dir of controller>/<name>", or "" when the controller is not mounted.
  std::string file(const std::string& controller, const char* name) const;
  bool apply_memory(uint64_t bytes);
  bool apply_cpus(double cpus);
  bool freeze(const char* state);

  std::map<std::string, std::string> dir_of_;  // controller → its run directory
  std::vector<std::string> dirs_;              // distinct run directories, creation order
  bool pids_limited_ = false;                  // apply() wrote pids.max
  bool removed_ = false;
};

// No cgroup: rootless without delegation. Limits fall back to rlimits elsewhere.
class CgroupNone final : public Cgroup {
 public:
  CgroupHost::Mode mode() const override { return CgroupHost::Mode::None; }
  std::map<std::string, Enforcement> apply(const Limits& limits) override;
  void add_process(pid_t pid) override;
  CgroupUsage usage() const override;
  void kill_all() override;
  void remove() override;
  bool remove_if_empty() override { return true; }
  void release() override {}
  std::vector<std::string> paths() const override;
};

// cpus in cores → the CFS quota in microseconds per kCpuPeriodUs (the kernel's minimum is 1 ms).
inline constexpr uint64_t kCpuPeriodUs = 100000;
uint64_t cpu_quota_us(double cpus);

}  // namespace sandcell::runtime
