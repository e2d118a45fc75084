// The supervisor's side of `--userns=auto` (see userns_mounts.hpp).
#include "userns_mounts.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/mount.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "fd_passing.hpp"
#include "proc_handle.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::runtime {
namespace {

void write_id_map(pid_t child, const char* file, uint32_t base, uint32_t size) {
  std::string path = std::to_string(child) + "/" + file;
  std::string map = "0 " + std::to_string(base) + " " + std::to_string(size) + "\n";
  UniqueFd fd = open_host_proc_file(path, O_WRONLY);  // checked procfs (proc_handle.hpp)
  // The kernel takes a map in one write only.
  if (write(fd.get(), map.data(), map.size()) != static_cast<ssize_t>(map.size()))
    throw Error(errno, "write /proc/" + path + " (" + map.substr(0, map.size() - 1) + ")");
}

// Why mount_setattr(MOUNT_ATTR_IDMAP) refused `tree`, when the kernel's EINVAL can be explained:
// a filesystem gets idmapped mounts in its own kernel release (tmpfs in 6.3), so Debian 12's 6.1
// refuses a source under /tmp or /dev/shm that a newer kernel takes.
std::string idmap_refusal(int err, int tree, const std::string& source) {
  struct statfs fs {};
  if (err != EINVAL || fstatfs(tree, &fs) != 0) return "";
  utsname host{};
  uname(&host);
  const std::string kernel = std::string("this kernel is ") + host.release;
  if (fs.f_type == TMPFS_MAGIC)
    return "; " + source + " is on tmpfs, which has idmapped mounts from Linux 6.3 and " + kernel;
  char magic[32];
  snprintf(magic, sizeof magic, "0x%lx", static_cast<unsigned long>(fs.f_type));
  return "; the filesystem of " + source + " (statfs magic " + magic +
         ") does not support idmapped mounts where " + kernel + " (ext4, xfs and btrfs do)";
}

UniqueFd idmapped_layer(const std::string& layer, int userns_fd) {
  UniqueFd tree(static_cast<int>(
      syscall(SYS_open_tree, AT_FDCWD, layer.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC)));
  if (!tree) throw Error(errno, "open_tree " + layer);
  mount_attr attr{};
  attr.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
  attr.userns_fd = static_cast<uint64_t>(userns_fd);
  if (syscall(SYS_mount_setattr, tree.get(), "", AT_EMPTY_PATH, &attr, sizeof attr) < 0) {
    const int err = errno;
    throw Error(err, "idmap the image layer " + layer + " (mount_setattr MOUNT_ATTR_IDMAP" +
                         idmap_refusal(err, tree.get(), layer) + ")");
  }
  return tree;
}

// A bind the spec asked to idmap (BindMount::idmap): its detached clone, which the child holds
// too and attaches after this message, gets the sandbox's user namespace as its idmapping. The
// clone is recursive, and so is the idmapping.
void idmap_bind_tree(const PlannedMount& bind, int userns_fd) {
  mount_attr attr{};
  attr.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
  attr.userns_fd = static_cast<uint64_t>(userns_fd);
  if (syscall(SYS_mount_setattr, bind.tree_fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr,
              sizeof attr) < 0) {
    const int err = errno;
    throw Error(err,
                "idmap the bind mount of " + bind.source + " at " + bind.destination +
                    " (mount_setattr MOUNT_ATTR_IDMAP" +
                    idmap_refusal(err, bind.tree_fd, bind.source) +
                    "; bind it without :idmap, or from a filesystem that takes idmapped mounts)");
  }
}

// Whether a tmpfs takes a user.* xattr: on a detached tmpfs of our own (nothing is attached).
bool tmpfs_has_user_xattrs() {
  UniqueFd context(static_cast<int>(syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC)));
  if (!context ||
      syscall(SYS_fsconfig, context.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) < 0)
    return true;  // cannot tell: no warning
  UniqueFd mount(static_cast<int>(syscall(SYS_fsmount, context.get(), FSMOUNT_CLOEXEC, 0)));
  if (!mount) return true;
  UniqueFd file(openat(mount.get(), "probe", O_CREAT | O_RDWR | O_CLOEXEC, 0600));
  if (!file) return true;
  return fsetxattr(file.get(), "user.sandcell.probe", "1", 1, 0) == 0 || errno != EOPNOTSUPP;
}

void send_layers(int sync_fd, const std::vector<UniqueFd>& layers) {
  std::vector<int> fds;
  for (const UniqueFd& layer : layers) fds.push_back(layer.get());
  char tag = 'u';
  iovec data{.iov_base = &tag, .iov_len = 1};
  static_assert(kMaxIdmappedLayers <= kMaxPassedFds);
  check(send_with_fds(sync_fd, {&data, 1}, fds), "send the idmapped image layers to the child");
}

}  // namespace

void map_user_namespace(pid_t child, const UsernsMapping& mapping, const ChildPlan& plan,
                        int sync_fd) {
  write_id_map(child, "uid_map", mapping.uid_base, mapping.size);
  write_id_map(child, "gid_map", mapping.gid_base, mapping.size);
  std::string ns_path = "/proc/" + std::to_string(child) + "/ns/user";
  UniqueFd userns(open(ns_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!userns) throw Error(errno, "open " + ns_path);
  std::vector<UniqueFd> layers;
  for (const std::string& layer : plan.lower_layers)
    layers.push_back(idmapped_layer(layer, userns.get()));
  for (const PlannedMount& m : plan.mounts)
    if (m.idmap && m.tree_fd >= 0) idmap_bind_tree(m, userns.get());
  send_layers(sync_fd, layers);
}

std::optional<std::string> userns_overlay_warning() {
  static const std::optional<std::string> warning = []() -> std::optional<std::string> {
    utsname host{};
    unsigned major = 0, minor = 0;
    if (uname(&host) != 0 || sscanf(host.release, "%u.%u", &major, &minor) != 2)
      return std::nullopt;
    if (major > 6 || (major == 6 && minor >= 6) || tmpfs_has_user_xattrs()) return std::nullopt;
    return std::string("userns: this kernel (") + host.release +
           ") has no user xattrs on tmpfs (Linux 6.6 has them), where the overlay keeps its marks "
           "in a "
           "user namespace: the sandbox can add and change the image's files but not remove or "
           "replace "
           "one of its directories; --userns host can";
  }();
  return warning;
}

}  // namespace sandcell::runtime
