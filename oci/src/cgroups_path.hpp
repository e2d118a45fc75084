#pragma once
// linux.cgroupsPath as runc's cgroupfs driver reads it, and the directories create makes for it.
// The path is the caller's decision (the kubelet's pod cgroup, podman's libpod_parent): unlike
// sandcell's own runs, sandcell-oci does not confine it below the `sandcell` parent.
#include <string>
#include <vector>

#include "sandcell/runtime/cgroup.hpp"

namespace sandcell::oci {

// The container's directory in each hierarchy, in the order they are joined: the v1 hierarchies
// (freezer first, so pause and the status read its state) then the unified one (v2, or a hybrid
// host's "unified"). Absolute: below each hierarchy's mount ("/kubepods/pod1/c1" →
// <memory mount>/kubepods/pod1/c1). Relative: below the `sandcell` parent of each hierarchy,
// the runtime's default parent. Empty: "oci-<id>" there. ".." is refused (a path must not
// climb out of the hierarchy).
struct CgroupDir {
  std::string mount, dir;  // the hierarchy's mount point, the container's directory in it
};
std::vector<CgroupDir> resolve_cgroups_path(const runtime::CgroupHost& host,
                                            const std::string& cgroups_path, const std::string& id);

struct MadeCgroups {
  std::vector<std::string> dirs;     // the container's directories (CgroupDir::dir)
  std::vector<std::string> created;  // what mkdir made, deepest first: all that delete removes
};

// mkdir -p of each directory, recording which components did not exist. `v2_controllers` are
// enabled in the subtree_control of each unified parent on the way down, as a v2 child only
// gets the files of controllers its parent enables. A new v1 cpuset directory gets its parent's
// cpus and mems (it refuses tasks while they are empty). On failure what was made is removed.
MadeCgroups make_cgroups(const std::vector<CgroupDir>& dirs,
                         const std::vector<std::string>& v2_controllers);

// Writes "+controller" to `parent`'s cgroup.subtree_control for each of `wanted` it offers and
// does not enable yet (a v2 child only has the files of the controllers its parent enables).
void enable_v2_controllers(const std::string& parent, const std::vector<std::string>& wanted);

// Kills what runs in `dirs` (bounded wait until they are empty), then removes `created`
// deepest first. A parent another container still uses (not empty) stays.
void remove_made_cgroups(const std::vector<std::string>& dirs,
                         const std::vector<std::string>& created);

}  // namespace sandcell::oci
