// Child-side steps of `--userns=auto`. clone3 made the child in a user namespace of its own,
// where it holds every capability but, until the supervisor writes uid_map and gid_map, no id:
// it cannot create a file anywhere the namespace owns. No allocation (see child_plan.hpp).
#include <fcntl.h>
#include <grp.h>
#include <linux/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "child_steps.hpp"

namespace sandcell::runtime {

IdmappedLayers wait_for_id_maps(const ChildPlan& plan) {
  IdmappedLayers layers;
  if (plan.own_user_ns) wait_for_go(plan);  // rootless: an identity map, no layers to receive
  if (!plan.user_namespace) return layers;
  layers.count = receive_from_supervisor(plan, layers.fds, kMaxIdmappedLayers,
                                         "wait for the user namespace's id maps");
  const size_t expected = plan.overlay_from_supervisor ? 1 : plan.lower_layers.size();
  if (layers.count != expected) {
    errno = EPROTO;
    child_fail(plan, "receive %zu idmapped image layers or overlays (got %zu)", expected,
               layers.count);
  }
  return layers;
}

LateBinds wait_for_late_binds(const ChildPlan& plan) {
  LateBinds late;
  if (plan.late_binds == 0) return late;
  char tag = 0;
  late.count = receive_from_supervisor(plan, late.fds, kMaxLateBinds,
                                       "wait for the late bind mounts", nullptr, 0, nullptr, &tag);
  if (tag != 'b' || late.count != plan.late_binds) {
    errno = EPROTO;
    child_fail(plan, "receive %zu late bind mounts (got %zu, tag %d)", plan.late_binds, late.count,
               tag);
  }
  return late;
}

void switch_to_namespace_root(const ChildPlan& plan) {
  if (!plan.user_namespace) return;
  // Until now the child ran with the supervisor's credentials, host uid 0, which the namespace
  // does not map. Switching to the namespace's uid 0 makes it the mapped host id; the host's
  // supplementary groups go too (unmapped, they would still open group-0 files on a bind
  // mount). Capabilities in the namespace stay (capabilities(7): the new euid is the
  // namespace's root). setgroups is allowed: the supervisor, privileged in the parent
  // namespace, wrote gid_map, so the kernel never required /proc/PID/setgroups to be "deny".
  if (child_setgroups(0, nullptr) < 0) child_fail(plan, "setgroups in the user namespace");
  if (child_setresgid(0) < 0) child_fail(plan, "setresgid 0 in the user namespace");
  if (child_setresuid(0) < 0) child_fail(plan, "setresuid 0 in the user namespace");
}

void attach_idmapped_layers(const ChildPlan& plan, const IdmappedLayers& layers) {
  // The whole root, which the supervisor mounted over the layers in the host's user namespace.
  if (plan.overlay_from_supervisor) {
    const char* point = plan.root_dir.c_str();
    if (mkdir(point, 0755) < 0) child_fail(plan, "mkdir %s", point);
    if (syscall(SYS_move_mount, layers.fds[0], "", AT_FDCWD, point, MOVE_MOUNT_F_EMPTY_PATH) < 0)
      child_fail(plan, "attach the overlay the supervisor made at %s", point);
    close(layers.fds[0]);
    return;
  }
  for (size_t i = 0; i < layers.count; ++i) {
    const char* point = plan.lower_mount_points[i].c_str();
    if (mkdir(point, 0755) < 0) child_fail(plan, "mkdir %s", point);
    if (syscall(SYS_move_mount, layers.fds[i], "", AT_FDCWD, point, MOVE_MOUNT_F_EMPTY_PATH) < 0)
      child_fail(plan, "attach the idmapped layer %s at %s", plan.lower_layers[i].c_str(), point);
    close(layers.fds[i]);
  }
}

}  // namespace sandcell::runtime
