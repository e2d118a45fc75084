#pragma once
// cgroup v2 has no devices controller: device access is decided by a BPF_PROG_TYPE_CGROUP_DEVICE
// program attached to the cgroup. This generates the program from the runtime-spec's rules, as
// runc's devicefilter does, and attaches it.
#include <linux/bpf.h>

#include <string>
#include <vector>

#include "cgroup_resources.hpp"

namespace sandcell::oci {

// v1 semantics: a rule of type 'a' sets the default (and drops the exceptions before it); of the
// rules after it, the last one matching a request decides.
std::vector<bpf_insn> device_program(const std::vector<DeviceRule>& rules);

// Loads the program and attaches it to the cgroup v2 directory `dir` (BPF_F_ALLOW_MULTI: the
// parents' programs still apply). Throws Error naming linux.resources.devices.
void attach_device_program(const std::string& dir, const std::vector<DeviceRule>& rules);

}  // namespace sandcell::oci
