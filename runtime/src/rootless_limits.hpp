#pragma once
// Limits without a cgroup of sandcell's own (rootless; docs/architecture.md, "Cgroups"): a
// delegated cgroup v2 subtree when the user owns one, otherwise rlimits, each reported in the
// result's `enforced`.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sandcell/runtime/cgroup.hpp"

namespace sandcell::runtime {

// The cgroup v2 directory this process may create sandbox cgroups below: its own cgroup (the
// "0::PATH" line of proc_self_cgroup, below v2_root) when the caller can write it, its
// cgroup.procs and cgroup.subtree_control, and it offers memory, pids and cpu — what systemd's
// Delegate=yes gives a user's service or scope. Nothing otherwise.
std::optional<std::string> delegated_cgroup_v2(const std::string& v2_root, std::string_view proc_self_cgroup);

// The cgroups an unprivileged sandcell may use: v2 below the delegated directory (after moving
// itself into a leaf there, as the no-internal-process rule requires), or none.
CgroupHost probe_rootless_cgroups(const CgroupHost& host);

// With no cgroup: adds RLIMIT_AS (memory), RLIMIT_CPU (cpu time, per process) and, when the
// sandbox has its own user namespace (so the count covers this sandbox only), RLIMIT_NPROC
// (pids) to `rlimits`, marks them in `enforced`, and adds a warning when a value had to be clamped
// to the current hard limit (raising it needs CAP_SYS_RESOURCE on the host).
void add_rlimit_fallbacks(const Limits& limits, bool own_user_ns, std::vector<Rlimit>& rlimits,
                          std::map<std::string, Enforcement>& enforced, std::vector<std::string>& warnings);

}  // namespace sandcell::runtime
