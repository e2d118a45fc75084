#pragma once
// The supervisor's side of `--userns=auto`: what only the host's root can do for the child.
#include <sys/types.h>

#include <functional>
#include <optional>
#include <span>
#include <string>

#include "child_plan.hpp"
#include "sandcell/runtime/result.hpp"

namespace sandcell::runtime {

// Before clone, ChildPlanBuilder::detach_bind_sources: a detached clone (open_tree) of every bind
// mount's source, which clone hands to the child. The child attaches it with move_mount, so it
// never walks the host path itself. The binds are not idmapped (what the sandbox writes there is
// owned by the mapped host ids) unless the spec asks for it (BindMount::idmap; map_user_namespace
// does it).

// After clone: writes the child's uid_map and gid_map, clones each image layer as a read-only
// mount idmapped with the child's user namespace (host 0 shows as the sandbox's 0, and the
// sandbox's files would be written back as host 0 if the layer were writable), and sends them
// to the child, which waits for this message before anything else. Binds with `idmap` are
// idmapped the same way, writable. Idmapping a mount needs
// CAP_SYS_ADMIN over the layer's filesystem, i.e. in the host's namespace: the child cannot.
// `maps_written`: the maps are in place already (RunOptions::nest_under: written from the parent
// user namespace by clone_nested()); only the layers are made and sent.
// `slots`: the run's own range first, then RunOptions::extra_userns_slots' (each a line of the
// maps after the one before it).
void map_user_namespace(pid_t child, std::span<const UsernsMapping> slots, const ChildPlan& plan,
                        int sync_fd, bool maps_written = false);

// After map_user_namespace, for a plan with late binds (BindMount::late): `make` (the caller's
// RunOptions::before_binds) makes their sources, then each gets its detached clone, idmapped as
// above where asked, and the clones go to the child in one message, in the plan's order. The
// child waits for it right before its declared mounts, so its own setup overlaps `make`.
void send_late_binds(pid_t child, const ChildPlan& plan, int sync_fd,
                     const std::function<void()>& make);

// In a user namespace overlayfs keeps its whiteouts' and opaque directories' marks in user.*
// xattrs (`userxattr`), and the upper layer is on the sandbox's scratch tmpfs, which has user
// xattrs from Linux 6.6 on. Before that (Debian 12's 6.1) a sandbox whose overlay is mounted in
// its namespace can add and change files of the image but not remove or replace one of its
// directories (EACCES). So on such a kernel (a detached tmpfs is tried once per process, only on
// a kernel older than 6.6) --userns=auto's overlay is mounted by the supervisor, in the host's
// user namespace (trusted.* xattrs), and sent to the child in place of the layers.
// SANDCELL_USERNS_OVERLAY=host chooses that on any kernel (tests), =namespace never.
bool host_userns_overlay();
// The record's warning where the limit stays: a rootless run (its overlay can only be mounted in
// its own namespace), or --userns=auto with SANDCELL_USERNS_OVERLAY=namespace on such a kernel.
std::optional<std::string> userns_overlay_warning(bool rootless);

}  // namespace sandcell::runtime
