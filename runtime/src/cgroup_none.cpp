#include "cgroup_versions.hpp"

namespace sandcell::runtime {

// Nothing is enforced here; the caller reports each limit as rlimit or none
// (docs/architecture.md, "Cgroups").
std::map<std::string, Enforcement> CgroupNone::apply(const Limits&) {
  return {};
}

// Without a cgroup the supervisor tracks the tree through pid 1 of the pid namespace instead.
void CgroupNone::add_process(pid_t) {}

CgroupUsage CgroupNone::usage() const {
  return {};
}

// Killing pid 1 of the sandbox's pid namespace takes the whole tree with it; that is the
// supervisor's job when there is no cgroup.
void CgroupNone::kill_all() {}

void CgroupNone::remove() {}

std::vector<std::string> CgroupNone::paths() const {
  return {};
}

}  // namespace sandcell::runtime
