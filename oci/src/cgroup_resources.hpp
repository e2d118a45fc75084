#pragma once
// linux.resources → cgroup control file writes, for the version that carries each controller
// (a hybrid host has memory in v1 and hugetlb in v2). Every field is either turned into writes
// or refused with its name; none is dropped. The writes are computed before anything is made,
// so a refused field leaves nothing behind.
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sandcell/runtime/cgroup.hpp"
#include "sandcell/runtime/spec.hpp"

namespace sandcell::oci {

enum class CgroupVersion { V1, V2 };
// "memory" → V1: the version whose hierarchy carries each controller here. Absent: not available.
using ControllerVersions = std::map<std::string, CgroupVersion>;
ControllerVersions controller_versions(const runtime::CgroupHost& host);

struct ControlWrite {
  std::string field;  // "linux.resources.memory.swap"
  CgroupVersion version;
  // (file, value) choices, the first whose file exists is written: blkio.weight or
  // blkio.bfq.weight, io.bfq.weight or io.weight (a different scale).
  std::vector<std::pair<std::string, std::string>> choices;
};

// A device rule as the runtime-spec writes it; major/minor -1 is "*", type 'a' is all.
struct DeviceRule {
  bool allow = false;
  char type = 'a';
  int64_t major = -1, minor = -1;
  std::string access = "rwm";
};

struct ResourcePlan {
  std::vector<ControlWrite> writes;
  // v2 only: the rules a BPF_PROG_TYPE_CGROUP_DEVICE program enforces (v1 writes devices.*).
  std::optional<std::vector<DeviceRule>> v2_device_rules;
  std::vector<std::string> v2_controllers;  // to enable in the unified parents' subtree_control
};

// `devices`: linux.devices, which runc allows in the device cgroup besides its defaults. Throws
// an input error naming the field it cannot express on these versions.
ResourcePlan plan_resources(const nlohmann::json& resources, const ControllerVersions& versions,
                            const std::vector<runtime::Device>& devices = {});

// Writes the plan into the container's directories (each write into the directory of its
// version that has the file). A file missing everywhere names the field: the controller is not
// there. A write the kernel refuses with EINVAL is retried once after the others (memory and
// memsw limits must be raised and lowered in opposite orders).
void apply_resources(const ResourcePlan& plan, const std::vector<std::string>& dirs);

// runc's conversions for v2 (libcontainer/cgroups/utils.go); the shares' one is the runtime's,
// which applies Limits::cpu_shares with it.
using runtime::cpu_shares_to_weight;
uint64_t blkio_weight_to_io_weight(uint64_t weight);

}  // namespace sandcell::oci
