#include "rootless_limits.hpp"

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <sstream>

#include "cgroup_files.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::runtime {
namespace {

bool offers(const std::string& dir, std::string_view controller) {
  std::istringstream words(cgroupfs::read_if_exists(dir + "/cgroup.controllers").value_or(""));
  for (std::string w; words >> w;)
    if (w == controller) return true;
  return false;
}

// Moves the supervisor to a leaf and enables the controllers for the directory's children: a
// cgroup with processes cannot (cgroup v2's no-internal-process rule). That fails (EBUSY) while
// another process, say the shell sandcell was started from, still lives there: then rlimits apply.
bool claim_subtree(const std::string& dir) {
  const std::string leaf = dir + "/supervisor";
  if (mkdir(leaf.c_str(), 0755) < 0 && errno != EEXIST) return false;
  try {
    cgroupfs::write(leaf + "/cgroup.procs", "0");
    cgroupfs::write(dir + "/cgroup.subtree_control", "+memory +pids +cpu");
  } catch (const Error&) {
    return false;
  }
  return true;
}

void add(std::vector<Rlimit>& rlimits, int resource, uint64_t soft, uint64_t hard, const char* limit,
         std::vector<std::string>& warnings) {
  rlimit current{};
  getrlimit(resource, &current);
  if (current.rlim_max != RLIM_INFINITY && hard > current.rlim_max) {
    warnings.push_back(std::string(limit) + ": clamped to the current hard rlimit " +
                       std::to_string(current.rlim_max) + " (raising it needs CAP_SYS_RESOURCE on the host)");
    hard = current.rlim_max;
    soft = std::min(soft, hard);
  }
  rlimits.push_back({.resource = resource, .soft = soft, .hard = hard});
}

}  // namespace

std::optional<std::string> delegated_cgroup_v2(const std::string& v2_root, std::string_view proc_self_cgroup) {
  std::istringstream lines{std::string(proc_self_cgroup)};
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("0::/")) continue;
    std::string path = line.substr(3);
    if (path.find("/..") != std::string::npos) return std::nullopt;
    std::string dir = v2_root + (path == "/" ? "" : path);
    for (const std::string& file : {dir, dir + "/cgroup.procs", dir + "/cgroup.subtree_control"})
      if (access(file.c_str(), W_OK) != 0) return std::nullopt;
    for (const char* controller : {"memory", "pids", "cpu"})
      if (!offers(dir, controller)) return std::nullopt;
    return dir;
  }
  return std::nullopt;
}

CgroupHost probe_rootless_cgroups(const CgroupHost& host) {
  CgroupHost rootless;
  if (host.v2_root.empty()) return rootless;
  auto dir = delegated_cgroup_v2(host.v2_root, cgroupfs::read_if_exists("/proc/self/cgroup").value_or(""));
  if (dir && claim_subtree(*dir)) {
    rootless.mode = CgroupHost::Mode::V2;
    rootless.v2_root = *dir;
  }
  return rootless;
}

void add_rlimit_fallbacks(const Limits& limits, bool own_user_ns, std::vector<Rlimit>& rlimits,
                          std::map<std::string, Enforcement>& enforced, std::vector<std::string>& warnings) {
  if (limits.memory_bytes) {
    // Address space, not resident memory: a program that maps much and touches little fails
    // earlier than under a cgroup, and an allocation fails (ENOMEM) instead of an OOM kill.
    add(rlimits, RLIMIT_AS, *limits.memory_bytes, *limits.memory_bytes, "memory_bytes", warnings);
    enforced["memory_bytes"] = Enforcement::Rlimit;
  }
  if (limits.cpu_s) {
    // Per process, in whole seconds. At the soft limit the kernel sends SIGXCPU, which ends the
    // program (sandcell's init is the sandbox's pid 1, not the program) and which only this limit
    // sends: the record's timeout_cpu is then certain. A program that catches or ignores it gets
    // SIGKILL a second later, at the hard limit. (Soft = hard sent SIGKILL alone, told from other
    // SIGKILLs only by the CPU time getrusage reports, which under load was found 23% below the
    // tick-sampled time the kernel checks the limit against.)
    auto seconds = static_cast<uint64_t>(std::ceil(*limits.cpu_s));
    add(rlimits, RLIMIT_CPU, seconds, seconds + 1, "cpu_s", warnings);
    enforced["cpu_s"] = Enforcement::Rlimit;
  }
  // RLIMIT_NPROC counts the processes of one uid in one user namespace (and its children), so
  // only a sandbox in a namespace of its own is counted alone; elsewhere it would count every
  // process of the user.
  if (limits.pids && own_user_ns) {
    // + 1: sandcell's init (the sandbox's pid 1) is not the program's.
    add(rlimits, RLIMIT_NPROC, *limits.pids + 1, *limits.pids + 1, "pids", warnings);
    enforced["pids"] = Enforcement::Rlimit;
  }
}

}  // namespace sandcell::runtime
