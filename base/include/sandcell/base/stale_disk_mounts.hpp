#pragma once
// Workspace disks (sandcell/base/workspace_disk.hpp) whose call is over: a crashed `sandcell code`
// leaves its disk mounted, and the loop device under it attached. Here, not in the agent library,
// because `sandcell gc` (the lean binary) removes them too.
#include <string>

namespace sandcell {

// Unmounts every mount point D/disk under `root` whose D/lock no process holds (a call holds its
// run directory's or session's lock while its disk is mounted). Returns how many; their loop
// devices (LO_FLAGS_AUTOCLEAR) detach with them.
int unmount_stale_disks(const std::string& root);

}  // namespace sandcell
