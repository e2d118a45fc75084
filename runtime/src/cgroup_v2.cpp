#include <fcntl.h>

#include <sstream>
#include <string_view>

#include "cgroup_files.hpp"
#include "cgroup_versions.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::runtime {
namespace {

// A frozen cgroup stops forking, so one kill pass catches everything; a task stuck in the kernel
// may keep the freeze from completing, so the wait is bounded and the kill goes ahead regardless.
constexpr std::chrono::milliseconds kV2FreezeLimit{1000};

bool lists_word(const std::string& text, std::string_view word) {
  std::istringstream words(text);
  std::string w;
  while (words >> w) {
    if (w == word) return true;
  }
  return false;
}

// The no-internal-process rule means a controller must be enabled in every ancestor's
// subtree_control before its files appear in the run directory; a controller the parent does
// not offer (a unified tree that has only hugetlb) is skipped, and its limits go unreported.
void enable_controllers(const std::string& dir) {
  const auto offered = cgroupfs::read_if_exists(dir + "/cgroup.controllers");
  if (!offered) return;
  const std::string subtree = dir + "/cgroup.subtree_control";
  const std::string enabled = cgroupfs::read_if_exists(subtree).value_or("");
  for (const char* controller : {"memory", "pids", "cpu"}) {
    if (!lists_word(*offered, controller) || lists_word(enabled, controller)) continue;
    cgroupfs::write(subtree, std::string("+") + controller);
  }
}

}  // namespace

CgroupV2::CgroupV2(const std::string& root, const std::string& run_id) {
  cgroupfs::check_run_id(run_id);
  const std::string parent = root + "/" + kCgroupParent;
  cgroupfs::make_dir(parent);
  enable_controllers(root);
  enable_controllers(parent);
  dir_ = parent + "/" + run_id;
  cgroupfs::make_dir(dir_);
  dir_fd_ = UniqueFd(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd_) {
    const int err = errno;
    ::rmdir(dir_.c_str());  // empty and ours: nothing can have joined it yet
    throw Error(err, "open " + dir_);
  }
}

CgroupV2::~CgroupV2() {
  try {
    remove();
  } catch (...) {
    // A destructor must not throw; `sandcell gc` removes what is left from the run state.
  }
}

std::map<std::string, Enforcement> CgroupV2::apply(const Limits& limits) {
  // A limit counts as enforced only when its control file exists, i.e. the controller is
  // enabled for this cgroup.
  std::map<std::string, Enforcement> enforced;
  if (limits.memory_bytes && cgroupfs::exists(file("memory.max"))) {
    cgroupfs::write(file("memory.max"), std::to_string(*limits.memory_bytes));
    // Without this, memory.max only pushes pages to swap and the OOM kill never comes.
    if (cgroupfs::exists(file("memory.swap.max"))) cgroupfs::write(file("memory.swap.max"), "0");
    enforced["memory_bytes"] = Enforcement::CgroupV2;
  }
  if (limits.pids && cgroupfs::exists(file("pids.max"))) {
    cgroupfs::write(file("pids.max"), std::to_string(*limits.pids));
    enforced["pids"] = Enforcement::CgroupV2;
  }
  if (limits.cpus && cgroupfs::exists(file("cpu.max"))) {
    const std::string value =
        std::to_string(cpu_quota_us(*limits.cpus)) + " " + std::to_string(kCpuPeriodUs);
    cgroupfs::write(file("cpu.max"), value);
    enforced["cpus"] = Enforcement::CgroupV2;
  }
  if (limits.cpu_shares && cgroupfs::exists(file("cpu.weight"))) {
    cgroupfs::write(file("cpu.weight"), std::to_string(cpu_shares_to_weight(*limits.cpu_shares)));
    enforced["cpu_shares"] = Enforcement::CgroupV2;
  }
  return enforced;
}

void CgroupV2::add_process(pid_t pid) {
  cgroupfs::write(file("cgroup.procs"), std::to_string(pid));
}

CgroupUsage CgroupV2::usage() const {
  // memory.peak needs Linux 5.19; memory.current is the best older kernels offer.
  auto peak = cgroupfs::single_value(file("memory.peak"));
  if (!peak) peak = cgroupfs::single_value(file("memory.current"));
  return {
      .cpu_ns = cgroupfs::keyed_value(file("cpu.stat"), "usage_usec") * 1000,
      .peak_memory_bytes = peak.value_or(0),
      .oom_kills = cgroupfs::keyed_value(file("memory.events"), "oom_kill"),
      .pids_limit_hits = cgroupfs::keyed_value(file("pids.events"), "max"),
  };
}

uint64_t CgroupV2::cpu_ns() const {
  return cgroupfs::keyed_value(file("cpu.stat"), "usage_usec") * 1000;
}

bool CgroupV2::freeze_within(std::chrono::microseconds limit) {
  if (removed_ || !cgroupfs::exists(file("cgroup.freeze"))) return false;
  cgroupfs::write(file("cgroup.freeze"), "1");
  return cgroupfs::wait_closely(
      [&] { return cgroupfs::keyed_value(file("cgroup.events"), "frozen") == 1; }, limit);
}

void CgroupV2::kill_all() {
  if (removed_) return;
  // cgroup.kill (Linux 5.14) kills the whole subtree atomically, forks in flight included.
  if (cgroupfs::exists(file("cgroup.kill"))) {
    cgroupfs::write(file("cgroup.kill"), "1");
    return;
  }
  freeze_and_kill();
}

void CgroupV2::freeze_and_kill() {
  const bool can_freeze = cgroupfs::exists(file("cgroup.freeze"));
  if (can_freeze) {
    cgroupfs::write(file("cgroup.freeze"), "1");
    if (cgroupfs::exists(file("cgroup.events"))) {
      cgroupfs::wait_until(
          [&] { return cgroupfs::keyed_value(file("cgroup.events"), "frozen") == 1; },
          kV2FreezeLimit);
    }
  }
  // The v2 freezer lets fatal signals through, so frozen tasks die on SIGKILL.
  cgroupfs::kill_procs(cgroupfs::tree_bottom_up(dir_));
  if (can_freeze) cgroupfs::write(file("cgroup.freeze"), "0");
}

bool CgroupV2::remove_if_empty() {
  if (!removed_ && cgroupfs::remove_if_empty({dir_})) {
    dir_fd_.reset();
    removed_ = true;
  }
  return removed_;
}

void CgroupV2::remove() {
  if (remove_if_empty()) return;
  kill_all();
  // Only the run directory and what the sandbox may have made below it; never the parent.
  cgroupfs::kill_and_remove(cgroupfs::tree_bottom_up(dir_));
  dir_fd_.reset();
  removed_ = true;
}

std::vector<std::string> CgroupV2::paths() const {
  return {dir_};
}

}  // namespace sandcell::runtime
