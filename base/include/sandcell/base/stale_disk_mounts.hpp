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

// In a mount namespace of the caller's own, just copied from the host's (CLONE_NEWNS): detaches
// its copies of sandcell's disks (ext4 on a loop device, mounted at some D/disk). Each copy holds
// its filesystem, so the loop device stays attached after its owner unmounts it, for as long as
// this namespace lives: where the host's mounts are private (no systemd) the unmount does not
// propagate here, and a container started again meanwhile waits for the image in vain (EBUSY).
// For long-lived namespaces that need none of them (an image build's RUN steps). Returns how many.
int detach_disk_copies();

}  // namespace sandcell
