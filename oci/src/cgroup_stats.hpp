#pragma once
// A container's cgroup statistics in the JSON shape `runc events` prints (runc's
// types/events.go), read from its directories in whichever version carries each controller.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sandcell::oci {

// The "data" of a {"type":"stats"} event: cpu, cpuset, memory, pids, blkio, hugetlb,
// intel_rdt, network_interfaces. Counters the host has no file for are left out (runc's
// omitempty), as are zero counters.
nlohmann::json cgroup_stats(const std::vector<std::string>& dirs);

// How many processes the OOM killer killed in the container's memory cgroup so far (v1
// memory.oom_control, v2 memory.events: "oom_kill").
uint64_t oom_kills(const std::vector<std::string>& dirs);

}  // namespace sandcell::oci
