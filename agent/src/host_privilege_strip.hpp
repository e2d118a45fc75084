#pragma once
// What sandboxed code writes into /workspace lands on the host, and through the idmapped bind
// it is owned by host ids: the sandbox's root writes files that are host uid 0's. A setuid bit,
// a file capability (security.capability, which the kernel translates through the idmapping into
// one valid on the host) or a device node there would be worth more on the host than inside the
// sandbox. After every phase the workspace is walked and all of it is taken away.
#include <cstdint>

namespace sandcell::agent {

struct PrivilegeStrip {
  uint64_t modes_cleared = 0;   // setuid/setgid bits taken off files and directories
  uint64_t xattrs_removed = 0;  // file capabilities and ACLs
  uint64_t nodes_removed = 0;   // character and block devices
};

// Walks the tree under `dir_fd`, at any depth, without following symlinks. Throws Error on a
// failure to clear what it found (never leaves a privileged file behind silently).
PrivilegeStrip strip_host_privileges(int dir_fd);

}  // namespace sandcell::agent
