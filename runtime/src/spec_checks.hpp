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

// The capabilities to keep → what to drop from the bounding set and the final state.
CapabilityPlan plan_capabilities(const std::vector<std::string>& keep);

// The host's LSMs, probed once per process.
const apparmor::LsmHost& lsm_host();

ChildPlan make_child_plan(const Spec& spec, const std::string& scratch_dir);

}  // namespace sandcell::runtime
