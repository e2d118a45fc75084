#pragma once
// Checks of a Spec that the parent makes before anything is created.
#include <string>
#include <vector>

#include "child_plan.hpp"
#include "sandcell/apparmor/lsm_probe.hpp"
#include "sandcell/runtime/spec.hpp"

namespace sandcell::runtime {

// Throws Error::invalid naming the field: no program, a missing rootfs, a relative cwd...
void check_spec(const Spec& spec);

// An absolute path with no "." or ".." components.
void check_sandbox_path(const std::string& path, const std::string& what);

// "NET_ADMIN" / "cap_net_admin" / "CAP_NET_ADMIN" → its value, via libcap.
cap_value_t capability_from_name(const std::string& name);

// The capabilities to keep → what to drop from the bounding set and the final state. The
// inheritable set holds them only when they are to be raised as ambient capabilities too.
CapabilityPlan plan_capabilities(const std::vector<std::string>& keep, bool raise_ambient);

// The host's LSMs, probed once per process.
const apparmor::LsmHost& lsm_host();

// argv/envp pointing into plan.args/env, and the PATH the program is searched in.
void fill_exec_arrays(ChildPlan& plan);

// OCI process.capabilities → bounding drops, the final effective/permitted/inheritable state,
// and the ambient set.
CapabilityPlan plan_capability_sets(const CapabilitySets& sets);

// Mounts are made parents first: fewer '/' in the destination first.
bool mounted_before(const PlannedMount& a, const PlannedMount& b);

}  // namespace sandcell::runtime
