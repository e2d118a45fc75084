// The result record's parts a run knows before, and after, its program: the isolation it gets,
// the limits each mechanism enforces, the status and usage from the supervision's outcome.
// Split from sandbox.cpp (run_sandbox()), which calls each once.
#pragma once

#include <map>
#include <string>

#include "child_messages.hpp"
#include "network_setup.hpp"
#include "sandcell/runtime/cgroup.hpp"
#include "sandcell/runtime/result.hpp"
#include "sandcell/runtime/spec.hpp"
#include "supervisor.hpp"

namespace sandcell::runtime {

// What the record says of the run's isolation before the clone (seccomp and userns are set later).
Isolation isolation_of(const Spec& spec, const NetworkPlan& network, CgroupHost::Mode mode);
// The limits applied to `cgroup`, and which mechanism enforces each (`Result::enforced`).
std::map<std::string, Enforcement> enforce_limits(Cgroup& cgroup, const Limits& limits);
void record_disk_bound(const Spec& spec, Result& result);
// A child that failed before exec: runtime_error, or 126/127 for exec's own failures.
void describe_failure(Result& result, const ChildMessage& failure);
// Status, exit code or signal, CPU and memory from the supervision's outcome and the cgroup's usage.
void fill_outcome(Result& result, const SupervisionOutcome& o, const CgroupUsage& usage, const Limits& limits);
bool cpu_rlimit_hit(const Result& result);

}  // namespace sandcell::runtime
