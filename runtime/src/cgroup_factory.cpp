#include <algorithm>
#include <cmath>

#include "cgroup_files.hpp"
#include "cgroup_versions.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::runtime {

uint64_t cpu_quota_us(double cpus) {
  if (!std::isfinite(cpus) || cpus <= 0) {
    throw Error::invalid("cpus must be a positive number, got " + std::to_string(cpus));
  }
  // The kernel rejects a CFS quota below 1 ms (EINVAL), so tiny requests round up to that.
  // Rounded by hand (cpus > 0), not with std::round: that one function was all the lean
  // binary took from libm, and every shared library costs each run its loading.
  const double quota = cpus * static_cast<double>(kCpuPeriodUs) + 0.5;
  return std::max<uint64_t>(1000, static_cast<uint64_t>(quota));
}

uint64_t cpu_shares_to_weight(uint64_t shares) {
  if (shares == 0) return 0;
  shares = std::clamp<uint64_t>(shares, 2, 262144);
  return 1 + ((shares - 2) * 9999) / 262142;
}

std::unique_ptr<Cgroup> create_cgroup(const CgroupHost& host, const std::string& run_id,
                                      CgroupNeeds needs) {
  switch (host.mode) {
    case CgroupHost::Mode::V2:
      return std::make_unique<CgroupV2>(host.v2_root, run_id);
    case CgroupHost::Mode::V1:
      return std::make_unique<CgroupV1>(host.v1_roots, run_id, needs);
    case CgroupHost::Mode::None:
      break;
  }
  return std::make_unique<CgroupNone>();
}

std::unique_ptr<Cgroup> create_cgroup_v2(const std::string& root, const std::string& run_id) {
  return std::make_unique<CgroupV2>(root, run_id);
}

bool remove_cgroup_dir(const std::string& path) {
  // gc reads paths from run state on disk; whatever it says, only our own subtree is touched.
  if (!cgroupfs::is_below_sandcell_parent(path)) return false;
  try {
    // On v2 one write kills the subtree; on v1 the kill loop in kill_and_remove re-kills
    // anything that forked between passes.
    if (cgroupfs::exists(path + "/cgroup.kill")) cgroupfs::write(path + "/cgroup.kill", "1");
    const auto dirs = cgroupfs::tree_bottom_up(path);
    for (const auto& dir : dirs) {
      // A v1 freezer left FROZEN by a crashed supervisor holds SIGKILL pending until THAWED.
      const std::string state = dir + "/freezer.state";
      if (cgroupfs::exists(state)) cgroupfs::write(state, "THAWED");
    }
    cgroupfs::kill_and_remove(dirs);
  } catch (const Error&) {
    return false;
  }
  return !cgroupfs::exists(path);
}

}  // namespace sandcell::runtime
