// Cgroup operations on an OCI container after `create` has exited: it is known only by the
// directories recorded in its state.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <sstream>

#include "cgroup_files.hpp"
#include "sandcell/runtime/cgroup.hpp"
#include "sandcell/runtime/container.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::runtime {
namespace {

// The directory of the v1 freezer, or the v2 directory (it has cgroup.freeze).
std::string freezer_dir(const std::vector<std::string>& paths) {
  for (const std::string& dir : paths)
    if (cgroupfs::exists(dir + "/freezer.state") || cgroupfs::exists(dir + "/cgroup.freeze")) return dir;
  throw Error(ENOTSUP, "no freezer cgroup for this container (pause needs the v1 freezer or cgroup v2)");
}

// "max", or v1's "no limit" (the largest page-aligned signed 64-bit value): none.
std::optional<uint64_t> limit_value(const std::string& path) {
  std::optional<std::string> text = cgroupfs::read_if_exists(path);
  if (!text || text->starts_with("max")) return std::nullopt;
  std::optional<uint64_t> value = cgroupfs::single_value(path);
  if (value && *value >= (uint64_t{1} << 62)) return std::nullopt;
  return value;
}

std::map<std::string, uint64_t> keyed_values(const std::string& path) {
  std::map<std::string, uint64_t> out;
  std::istringstream in(cgroupfs::read_if_exists(path).value_or(""));
  std::string key;
  for (uint64_t value = 0; in >> key >> value;) out[key] = value;
  return out;
}

}  // namespace

ContainerCgroupStats container_cgroup_stats(const std::vector<std::string>& cgroup_paths) {
  ContainerCgroupStats s;
  const uint64_t ns_per_tick = 1000000000ull / static_cast<uint64_t>(std::max(sysconf(_SC_CLK_TCK), 1L));
  for (const std::string& dir : cgroup_paths) {
    if (cgroupfs::exists(dir + "/memory.current")) {  // v2: everything in this directory
      s.memory_usage = cgroupfs::single_value(dir + "/memory.current");
      s.memory_limit = limit_value(dir + "/memory.max");
      s.memory_stat = keyed_values(dir + "/memory.stat");
      std::map<std::string, uint64_t> cpu = keyed_values(dir + "/cpu.stat");
      if (cpu.contains("usage_usec")) s.cpu_total_ns = cpu["usage_usec"] * 1000;
      s.cpu_user_ns = cpu["user_usec"] * 1000;
      s.cpu_system_ns = cpu["system_usec"] * 1000;
    }
    if (cgroupfs::exists(dir + "/memory.usage_in_bytes")) {
      s.memory_usage = cgroupfs::single_value(dir + "/memory.usage_in_bytes");
      s.memory_limit = limit_value(dir + "/memory.limit_in_bytes");
      s.memory_stat = keyed_values(dir + "/memory.stat");
    }
    if (cgroupfs::exists(dir + "/cpuacct.usage")) {
      s.cpu_total_ns = cgroupfs::single_value(dir + "/cpuacct.usage");
      std::istringstream percpu(cgroupfs::read_if_exists(dir + "/cpuacct.usage_percpu").value_or(""));
      for (uint64_t ns = 0; percpu >> ns;) s.cpu_percpu_ns.push_back(ns);
      std::map<std::string, uint64_t> ticks = keyed_values(dir + "/cpuacct.stat");
      s.cpu_user_ns = ticks["user"] * ns_per_tick;
      s.cpu_system_ns = ticks["system"] * ns_per_tick;
    }
    if (cgroupfs::exists(dir + "/pids.current")) {
      s.pids_current = cgroupfs::single_value(dir + "/pids.current");
      s.pids_limit = limit_value(dir + "/pids.max");
    }
  }
  return s;
}

std::vector<pid_t> container_pids(const std::vector<std::string>& cgroup_paths) {
  std::vector<pid_t> pids;
  for (const std::string& dir : cgroup_paths)
    for (pid_t pid : cgroupfs::procs(dir))
      if (std::find(pids.begin(), pids.end(), pid) == pids.end()) pids.push_back(pid);
  std::sort(pids.begin(), pids.end());
  return pids;
}

void freeze_container(const std::vector<std::string>& cgroup_paths, bool frozen) {
  const std::string dir = freezer_dir(cgroup_paths);
  if (cgroupfs::exists(dir + "/cgroup.freeze")) {
    cgroupfs::write(dir + "/cgroup.freeze", frozen ? "1" : "0");
    return;
  }
  cgroupfs::write(dir + "/freezer.state", frozen ? "FROZEN" : "THAWED");
  // FREEZING is transient: wait (bounded) so `pause` returns with the container stopped.
  const char* wanted = frozen ? "FROZEN" : "THAWED";
  bool done = cgroupfs::wait_until([&] { return cgroupfs::read(dir + "/freezer.state").starts_with(wanted); },
                                   std::chrono::milliseconds(2000));
  if (!done) throw Error(EBUSY, "freezer of " + dir + " did not reach " + wanted);
}

bool container_frozen(const std::vector<std::string>& cgroup_paths) {
  for (const std::string& dir : cgroup_paths) {
    if (auto state = cgroupfs::read_if_exists(dir + "/freezer.state")) return state->starts_with("FROZEN");
    if (auto v2 = cgroupfs::read_if_exists(dir + "/cgroup.freeze")) return v2->starts_with("1");
  }
  return false;
}

}  // namespace sandcell::runtime
