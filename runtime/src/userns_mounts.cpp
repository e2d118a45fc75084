// The supervisor's side of `--userns=auto` (see userns_mounts.hpp).
#include "userns_mounts.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/mount.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "proc_handle.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/runtime/fd_passing.hpp"

namespace sandcell::runtime {
namespace {

// One line per slot: slot i's host ids at the sandbox's i*size (RunOptions::extra_userns_slots).
void write_id_map(pid_t child, const char* file, std::span<const UsernsMapping> slots, bool uid) {
  std::string path = std::to_string(child) + "/" + file;
  std::string map;
  uint64_t inside = 0;
  for (const UsernsMapping& slot : slots) {
    map += std::to_string(inside) + " " + std::to_string(uid ? slot.uid_base : slot.gid_base) +
           " " + std::to_string(slot.size) + "\n";
    inside += slot.size;
  }
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
void idmap_bind_tree(const PlannedMount& bind, int tree_fd, int userns_fd) {
  mount_attr attr{};
  attr.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
  attr.userns_fd = static_cast<uint64_t>(userns_fd);
  if (syscall(SYS_mount_setattr, tree_fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) <
      0) {
    const int err = errno;
    throw Error(err,
                "idmap the bind mount of " + bind.source + " at " + bind.destination +
                    " (mount_setattr MOUNT_ATTR_IDMAP" + idmap_refusal(err, tree_fd, bind.source) +
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

// The sandbox's scratch options without the ids the child's tmpfs takes inside its namespace.
std::string host_tmpfs_options(const std::string& scratch_options) {
  std::string options;
  size_t begin = 0;
  while (begin <= scratch_options.size()) {
    size_t end = scratch_options.find(',', begin);
    if (end == std::string::npos) end = scratch_options.size();
    const std::string option = scratch_options.substr(begin, end - begin);
    if (!option.empty() && !option.starts_with("uid=") && !option.starts_with("gid="))
      options += (options.empty() ? "" : ",") + option;
    begin = end + 1;
  }
  return options;
}

// The overlay of --userns=auto made in the host's user namespace
// (ChildPlan::overlay_from_supervisor): overlayfs clones its layers with clone_private_mount, which
// takes only mounts attached in the caller's mount namespace, so a thread unshares one of its own
// (private; it ends with the thread), attaches the idmapped layers and a tmpfs sized like the
// scratch, mounts the overlay there (trusted.* xattrs, which every tmpfs has) and returns a
// detached clone of it. The upper directory belongs to the sandbox's root (the mapped base ids), as
// the one the child makes does.
UniqueFd host_userns_overlay_tree(const std::vector<UniqueFd>& layers, const ChildPlan& plan,
                                  const UsernsMapping& mapping) {
  UniqueFd tree;
  std::exception_ptr failed;
  std::thread([&] {
    try {
      check(unshare(CLONE_FS | CLONE_NEWNS), "unshare a mount namespace for the sandbox's overlay");
      check(mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr),
            "make the overlay's mount namespace private");
      const char* base = plan.scratch_dir.c_str();  // exists; covered in this namespace only
      check(mount("tmpfs", base, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700"),
            "mount a tmpfs for the overlay's mount points on " + plan.scratch_dir);
      check(chdir(base), "chdir " + plan.scratch_dir);
      std::string lowers;
      for (size_t i = 0; i < layers.size(); ++i) {
        const std::string point = "l" + std::to_string(i);
        check(mkdir(point.c_str(), 0700), "mkdir " + point);
        check(static_cast<int>(syscall(SYS_move_mount, layers[i].get(), "", AT_FDCWD, point.c_str(),
                                       MOVE_MOUNT_F_EMPTY_PATH)),
              "attach the idmapped layer " + plan.lower_layers[i]);
        lowers += (lowers.empty() ? "" : ":") + point;
      }
      check(mkdir("rw", 0700), "mkdir rw");
      check(mount("tmpfs", "rw", "tmpfs", MS_NOSUID | MS_NODEV,
                  host_tmpfs_options(plan.scratch_options).c_str()),
            "mount the overlay's upper tmpfs");
      check(mkdir("rw/upper", 0755), "mkdir the overlay's upper directory");
      check(chown("rw/upper", mapping.uid_base, mapping.gid_base),
            "chown the overlay's upper directory");
      check(mkdir("rw/work", 0700), "mkdir the overlay's work directory");
      check(mkdir("root", 0755), "mkdir root");
      const std::string options = "lowerdir=" + lowers + ",upperdir=rw/upper,workdir=rw/work";
      check(mount("overlay", "root", "overlay", MS_NOSUID | MS_NODEV, options.c_str()),
            "mount the overlay in the host's user namespace (" + options + ")");
      tree.reset(static_cast<int>(
          syscall(SYS_open_tree, AT_FDCWD, "root", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC)));
      if (!tree) throw Error(errno, "open_tree the sandbox's overlay");
    } catch (...) {
      failed = std::current_exception();
    }
  }).join();
  if (failed) std::rethrow_exception(failed);
  return tree;
}

void send_layers(int sync_fd, const std::vector<UniqueFd>& layers) {
  std::vector<int> fds;
  for (const UniqueFd& layer : layers) fds.push_back(layer.get());
  char tag = 'u';
  iovec data{.iov_base = &tag, .iov_len = 1};
  static_assert(kMaxIdmappedLayers <= kMaxPassedFds);
  check(send_with_fds(sync_fd, {&data, 1}, fds), "send the idmapped image layers to the child");
}

// Kernels before 6.6: whether a tmpfs refuses user.* xattrs (asked once per process).
bool tmpfs_lacks_user_xattrs() {
  static const bool lacks = [] {
    utsname host{};
    unsigned major = 0, minor = 0;
    if (uname(&host) != 0 || sscanf(host.release, "%u.%u", &major, &minor) != 2) return false;
    return !(major > 6 || (major == 6 && minor >= 6)) && !tmpfs_has_user_xattrs();
  }();
  return lacks;
}

}  // namespace

bool host_userns_overlay() {
  static const bool chosen = [] {
    const char* setting = getenv("SANDCELL_USERNS_OVERLAY");
    if (setting != nullptr && strcmp(setting, "host") == 0) return true;
    if (setting != nullptr && strcmp(setting, "namespace") == 0) return false;
    return tmpfs_lacks_user_xattrs();
  }();
  return chosen;
}

void map_user_namespace(pid_t child, std::span<const UsernsMapping> slots, const ChildPlan& plan,
                        int sync_fd, bool maps_written) {
  const UsernsMapping& mapping = slots.front();
  if (!maps_written) {
    write_id_map(child, "uid_map", slots, true);
    write_id_map(child, "gid_map", slots, false);
  }
  std::string ns_path = "/proc/" + std::to_string(child) + "/ns/user";
  UniqueFd userns(open(ns_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!userns) throw Error(errno, "open " + ns_path);
  std::vector<UniqueFd> layers;
  for (const std::string& layer : plan.lower_layers)
    layers.push_back(idmapped_layer(layer, userns.get()));
  for (const PlannedMount& m : plan.mounts)
    if (m.idmap && m.tree_fd >= 0) idmap_bind_tree(m, m.tree_fd, userns.get());
  if (plan.overlay_from_supervisor) {
    std::vector<UniqueFd> overlay;
    overlay.push_back(host_userns_overlay_tree(layers, plan, mapping));
    layers = std::move(overlay);
  }
  send_layers(sync_fd, layers);
}

void send_late_binds(pid_t child, const ChildPlan& plan, int sync_fd,
                     const std::function<void()>& make) {
  if (!make) throw Error::invalid("a late bind mount needs RunOptions::before_binds");
  make();
  std::string ns_path = "/proc/" + std::to_string(child) + "/ns/user";
  UniqueFd userns(open(ns_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!userns) throw Error(errno, "open " + ns_path);
  std::vector<UniqueFd> trees;
  std::vector<int> fds;
  for (const PlannedMount& m : plan.mounts) {
    if (!m.late) continue;
    UniqueFd tree(static_cast<int>(syscall(SYS_open_tree, AT_FDCWD, m.source.c_str(),
                                           OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE)));
    if (!tree)
      throw Error(errno, "open_tree " + m.source + " for the bind mount at " + m.destination);
    struct stat st {};
    if (fstat(tree.get(), &st) != 0 || !S_ISDIR(st.st_mode))  // the plan made a directory for it
      throw Error(ENOTDIR, "the late bind mount's source " + m.source + " is not a directory");
    if (m.idmap) idmap_bind_tree(m, tree.get(), userns.get());
    fds.push_back(tree.get());
    trees.push_back(std::move(tree));
  }
  char tag = 'b';
  iovec data{.iov_base = &tag, .iov_len = 1};
  static_assert(kMaxLateBinds <= kMaxPassedFds);
  check(send_with_fds(sync_fd, {&data, 1}, fds), "send the late bind mounts to the child");
}

std::optional<std::string> userns_overlay_warning(bool rootless) {
  if (!tmpfs_lacks_user_xattrs() || (!rootless && host_userns_overlay())) return std::nullopt;
  utsname host{};
  uname(&host);
  return std::string("userns: this kernel (") + host.release +
         ") has no user xattrs on tmpfs (Linux 6.6 has them), where the overlay keeps its "
         "marks in a user namespace: the sandbox can add and change the image's files but not "
         "remove or replace one of its directories" +
         (rootless ? "" : "; --userns host can");
}

}  // namespace sandcell::runtime
