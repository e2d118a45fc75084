// Child-side mount steps: private propagation, the overlay rootfs, declared mounts, /proc /dev
// /sys, pivot_root, and Docker's masked and read-only paths. No allocation (see child_plan.hpp).
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "child_steps.hpp"

namespace sandcell::runtime {
namespace {
constexpr unsigned long kNoSuidDev = MS_NOSUID | MS_NODEV;
}  // namespace

int open_beneath(int dirfd, const char* path, int flags, unsigned long long resolve) {
  open_how how{};
  how.flags = static_cast<unsigned long long>(flags) | O_CLOEXEC;
  how.resolve = resolve;
  return static_cast<int>(syscall(SYS_openat2, dirfd, path, &how, sizeof how));
}

namespace {

// The mount id of the /dev the runtime built (note_runtime_dev); 0 until there is one. A mount
// id, not st_dev: a /dev bound from a volume shares st_dev with everything else on that disk.
// The child is one thread, and this is its only copy.
uint64_t runtime_dev_mount = 0;

uint64_t mount_id_of(int fd) {
  struct statx stx {};
  if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) < 0 || !(stx.stx_mask & STATX_MNT_ID))
    return 0;
  return stx.stx_mnt_id;
}
constexpr long kMqueueMagic = 0x19800202;  // not in <linux/magic.h>

// Docker and runc allow these /proc files to be covered (lxcfs binds its views over them);
// anything else under /proc is refused, as runc's checkProcMount does.
bool proc_destination_allowed(const char* path) {
  static constexpr const char* kAllowed[] = {"/proc/cpuinfo", "/proc/diskstats",
                                             "/proc/meminfo", "/proc/stat",
                                             "/proc/swaps",   "/proc/uptime",
                                             "/proc/loadavg", "/proc/slabinfo",
                                             "/proc/net/dev", "/proc/sys/kernel/ns_last_pid"};
  for (const char* allowed : kAllowed)
    if (strcmp(path, allowed) == 0) return true;
  return false;
}

// What kind of place `fd` is, when it is one a mount must not be steered onto; nullptr if none.
const char* special_place(int fd) {
  struct statfs fs {};
  if (fstatfs(fd, &fs) < 0) return "an unknown filesystem";
  switch (fs.f_type) {
    case PROC_SUPER_MAGIC:
      return "procfs";
    case SYSFS_MAGIC:
      return "sysfs";
    case DEVPTS_SUPER_MAGIC:
      return "devpts";
    case kMqueueMagic:
      return "mqueue";
    default:
      return runtime_dev_mount != 0 && mount_id_of(fd) == runtime_dev_mount ? "the runtime's /dev"
                                                                            : nullptr;
  }
}

// runc GHSA-fh74-hm69-rqjw / CVE-2025-52565 class: an image symlink (/dev -> /proc/sys/kernel,
// /etc/resolv.conf -> /proc/sys/kernel/core_pattern) steers a config mount onto procfs, sysfs or
// the /dev the runtime fills with device nodes. Decided on the opened target (fstatfs, fstat),
// not on the path: a mount may land there only when the path names the place itself, with no
// symlink on the way, and under /proc only on runc's short list.
void refuse_special_target(const ChildPlan& plan, int rootfd, const char* path, int fd) {
  struct stat st {};
  if (fstat(fd, &st) < 0) child_fail(plan, "stat mount point %s", path);
  const char* place = special_place(fd);
  if (place == nullptr) return;
  int literal = open_beneath(rootfd, path, O_PATH, RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS);
  struct stat lst {};
  bool same = literal >= 0 && fstat(literal, &lst) == 0 && lst.st_dev == st.st_dev &&
              lst.st_ino == st.st_ino;
  if (literal >= 0) close(literal);
  bool proc = strcmp(place, "procfs") == 0;
  if (same && (!proc || proc_destination_allowed(path))) return;
  errno = EPERM;
  child_fail(plan, "mount destination %s resolves onto %s (%s)", path, place,
             same ? "only a short list of /proc files may be covered" : "through a symlink");
}

}  // namespace

void note_runtime_dev(const ChildPlan& plan, int rootfd) {
  int dev =
      open_beneath(rootfd, "dev", O_PATH | O_DIRECTORY, RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS);
  if (dev < 0) child_fail(plan, "open /dev (it must be a directory, not a symlink)");
  runtime_dev_mount = mount_id_of(dev);
  close(dev);
}

// Opens `path` (absolute, inside the sandbox) as an O_PATH fd, creating missing directories and,
// when `as_file`, a missing last component as an empty file. Every lookup is resolved with the
// rootfs as "/" (RESOLVE_IN_ROOT), so a symlink the image planted cannot lead a mount outside.
int open_mount_target(const ChildPlan& plan, int rootfd, const char* path, bool as_file) {
  char prefix[PATH_MAX];
  int parent = dup(rootfd);
  const char* cursor = path;
  while (*cursor == '/') ++cursor;
  while (*cursor != '\0') {
    const char* slash = strchr(cursor, '/');
    size_t end = slash ? static_cast<size_t>(slash - path) : strlen(path);
    bool last = slash == nullptr || slash[strspn(slash, "/")] == '\0';
    snprintf(prefix, sizeof prefix, "%.*s", static_cast<int>(end), path);
    const char* name = prefix + (cursor - path);
    int fd = open_beneath(rootfd, prefix, O_PATH, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
    if (fd < 0 && errno == ENOENT) {
      int made = (last && as_file)
                     ? openat(parent, name, O_CREAT | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644)
                     : mkdirat(parent, name, 0755);
      if (made < 0 && errno != EEXIST) child_fail(plan, "create mount point %s", path);
      if (last && as_file && made >= 0) close(made);
      fd = open_beneath(rootfd, prefix, O_PATH, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
    }
    if (fd < 0) child_fail(plan, "open mount point %s", path);
    close(parent);
    parent = fd;
    if (last) break;
    cursor = slash + strspn(slash, "/");
  }
  refuse_special_target(plan, rootfd, path, parent);
  return parent;
}

void mount_at_fd(const ChildPlan& plan, const char* source, int target_fd, const char* fstype,
                 unsigned long flags, const char* data, const char* what) {
  char target[64];
  snprintf(target, sizeof target, "/proc/self/fd/%d", target_fd);
  if (mount(source, target, fstype, flags, data) < 0) child_fail(plan, "mount %s", what);
}

void remount_read_only(const ChildPlan& plan, int target_fd, unsigned long extra,
                       const char* what) {
  char target[64];
  snprintf(target, sizeof target, "/proc/self/fd/%d", target_fd);
  if (mount(nullptr, target, nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY | extra, nullptr) < 0)
    child_fail(plan, "remount %s read-only", what);
}

namespace {

// /proc, /dev and /sys must be real directories of the image: a symlink there (a trick from
// CVE-2019-16884 and friends) is refused rather than followed.
int open_system_dir(const ChildPlan& plan, int rootfd, const char* name) {
  if (mkdirat(rootfd, name, 0755) < 0 && errno != EEXIST) child_fail(plan, "create /%s", name);
  int fd = open_beneath(rootfd, name, O_PATH | O_DIRECTORY, RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH);
  if (fd < 0)
    child_fail(plan, "open /%s in the rootfs (it must be a directory, not a symlink)", name);
  return fd;
}

}  // namespace

int open_root(const ChildPlan& plan) {
  int fd = open(plan.root_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) child_fail(plan, "open %s", plan.root_dir.c_str());
  return fd;
}

int mknod_exact(int dirfd, const char* name, mode_t mode, dev_t dev) {
  // The node gets exactly `mode` (mknod applies the umask, and the supervisor's may be stricter)
  // with no chmod afterwards: a chmod by name follows a symlink that a process sharing the
  // directory swapped in meanwhile, resolved against the host's root before pivot_root.
  mode_t saved = umask(0);
  int made = mknodat(dirfd, name, mode, dev);
  int err = errno;
  umask(saved);
  errno = err;
  return made;
}

void make_device_nodes(const ChildPlan& plan, int devfd) {
  // The host's numbers, as runc makes them. mknod where we may (six inodes in our /dev tmpfs,
  // ~0.1 ms less than six bind mounts and their teardown); in a user namespace mknod is refused,
  // so there the host's nodes are bound onto empty files. Either way only these nodes exist: the
  // sandbox has no CAP_MKNOD, and the overlay below is mounted nodev.
  static constexpr struct {
    const char* name;
    unsigned major, minor;
  } kDevices[] = {{"null", 1, 3},   {"zero", 1, 5},    {"full", 1, 7},
                  {"random", 1, 8}, {"urandom", 1, 9}, {"tty", 5, 0}};
  char source[32];
  for (const auto& device : kDevices) {
    if (mknod_exact(devfd, device.name, S_IFCHR | 0666, makedev(device.major, device.minor)) == 0)
      continue;
    if (errno != EPERM) child_fail(plan, "mknod /dev/%s", device.name);
    int made = openat(devfd, device.name, O_CREAT | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (made < 0) child_fail(plan, "create /dev/%s", device.name);
    close(made);
    int target = open_beneath(devfd, device.name, O_PATH, RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH);
    if (target < 0) child_fail(plan, "open /dev/%s", device.name);
    snprintf(source, sizeof source, "/dev/%s", device.name);
    mount_at_fd(plan, source, target, nullptr, MS_BIND, nullptr, source);
    close(target);
  }
}

namespace {

void make_dev_links_and_dirs(const ChildPlan& plan, int devfd) {
  static constexpr const char* kLinks[][2] = {{"ptmx", "pts/ptmx"},
                                              {"fd", "/proc/self/fd"},
                                              {"stdin", "/proc/self/fd/0"},
                                              {"stdout", "/proc/self/fd/1"},
                                              {"stderr", "/proc/self/fd/2"}};
  for (const auto& link : kLinks)
    if (symlinkat(link[1], devfd, link[0]) < 0) child_fail(plan, "symlink /dev/%s", link[0]);
  if (mkdirat(devfd, "pts", 0755) < 0 || mkdirat(devfd, "shm", 01777) < 0)
    child_fail(plan, "create /dev/pts and /dev/shm");
  int pts = open_beneath(devfd, "pts", O_PATH | O_DIRECTORY, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS);
  int shm = open_beneath(devfd, "shm", O_PATH | O_DIRECTORY, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS);
  if (pts < 0 || shm < 0) child_fail(plan, "open /dev/pts and /dev/shm");
  mount_at_fd(plan, "devpts", pts, "devpts", MS_NOSUID | MS_NOEXEC,
              "newinstance,ptmxmode=0666,mode=0620", "devpts on /dev/pts");
  mount_at_fd(plan, "shm", shm, "tmpfs", kNoSuidDev | MS_NOEXEC, plan.shm_options.c_str(),
              "tmpfs on /dev/shm");
  close(pts);
  close(shm);
}

}  // namespace

void make_mounts_private(const ChildPlan& plan) {
  // Nothing we mount may propagate back to the host, and host mount events must not reach us.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0)
    child_fail(plan, "make / private (MS_REC|MS_PRIVATE)");
}

void mount_scratch(const ChildPlan& plan) {
  // The upper layer lives in a tmpfs only this mount namespace sees: the run's writes vanish
  // with it, and the lower directories are never modified. With --userns=auto the paths below
  // are relative to it (child_plan.cpp, plan_userns_rootfs).
  if (mount("tmpfs", plan.scratch_dir.c_str(), "tmpfs", kNoSuidDev, plan.scratch_options.c_str()) <
      0)
    child_fail(plan, "mount tmpfs on %s", plan.scratch_dir.c_str());
  if (chdir(plan.scratch_dir.c_str()) < 0) child_fail(plan, "chdir %s", plan.scratch_dir.c_str());
}

void mount_rootfs(const ChildPlan& plan) {
  if (plan.overlay_from_supervisor) return;  // attached with the layers (attach_idmapped_layers)
  for (const std::string* dir : {&plan.upper_dir, &plan.work_dir, &plan.root_dir}) {
    if (plan.persistent_upper && dir != &plan.root_dir) continue;
    if (mkdir(dir->c_str(), 0755) < 0) child_fail(plan, "mkdir %s", dir->c_str());
  }
  for (const ChildPlan::UpperEntry& entry : plan.upper_entries) {
    const char* path = entry.path.c_str();
    int made = entry.directory ? mkdir(path, 0755)
                               : open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
    if (made < 0) child_fail(plan, "create %s in the overlay's upper layer", path);
    if (!entry.directory) close(made);
  }
  if (mount("overlay", plan.root_dir.c_str(), "overlay", MS_NOSUID | MS_NODEV,
            plan.overlay_options.c_str()) < 0)
    child_fail(plan, "mount overlay on %s", plan.root_dir.c_str());
}

namespace {

// Every bind is nosuid,nodev (what a sandbox wrote into a volume must not become a setuid or
// device file for the next), read-only when asked. A remount inside a user namespace must keep
// the flags the source's mount has locked (noexec, the atime mode: EPERM otherwise), so the
// source's flags are carried over, as runc does.
void remount_bind(const ChildPlan& plan, int target_fd, bool read_only, const char* what) {
  struct statfs st {};
  if (fstatfs(target_fd, &st) < 0) child_fail(plan, "statfs %s", what);
  unsigned long flags = kNoSuidDev | (read_only || (st.f_flags & ST_RDONLY) ? MS_RDONLY : 0);
  if (st.f_flags & ST_NOEXEC) flags |= MS_NOEXEC;
  if (st.f_flags & ST_NODIRATIME) flags |= MS_NODIRATIME;
  if (st.f_flags & ST_NOATIME)
    flags |= MS_NOATIME;
  else if (st.f_flags & ST_RELATIME)
    flags |= MS_RELATIME;
  else
    flags |= MS_STRICTATIME;
  char target[64];
  snprintf(target, sizeof target, "/proc/self/fd/%d", target_fd);
  if (mount(nullptr, target, nullptr, MS_BIND | MS_REMOUNT | flags, nullptr) < 0)
    child_fail(plan, "remount the bind mount at %s nosuid,nodev%s", what, read_only ? ",ro" : "");
}

// --userns=auto: the supervisor cloned the bind source (open_tree) while it could still reach
// it; as the namespace's root the child may not be able to walk the path itself.
void attach_tree(const ChildPlan& plan, int tree_fd, int target_fd, const char* what) {
  if (syscall(SYS_move_mount, tree_fd, "", target_fd, "",
              MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
    child_fail(plan, "attach the bind mount at %s", what);
  close(tree_fd);
}

}  // namespace

void apply_declared_mounts(const ChildPlan& plan, const LateBinds& late) {
  int rootfd = open_root(plan);
  size_t next_late = 0;
  for (const PlannedMount& m : plan.mounts) {
    const char* dst = m.destination.c_str();
    bool bind = m.kind == PlannedMount::Kind::Bind;
    int target = open_mount_target(plan, rootfd, dst, bind && !m.source_is_dir);
    if (bind) {
      if (m.late)
        attach_tree(plan, late.fds[next_late++], target, dst);  // wait_for_late_binds counted them
      else if (m.tree_fd >= 0)
        attach_tree(plan, m.tree_fd, target, dst);
      else
        mount_at_fd(plan, m.source.c_str(), target, nullptr, MS_BIND | MS_REC, nullptr, dst);
      // A bind mount ignores flags on creation; they apply through a remount of the new
      // mount, which a fresh lookup reaches (the old fd still names what lies beneath).
      close(target);
      target = open_beneath(rootfd, dst, O_PATH, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
      if (target < 0) child_fail(plan, "reopen %s", dst);
      remount_bind(plan, target, m.read_only, dst);
    } else {
      mount_at_fd(plan, "tmpfs", target, "tmpfs",
                  kNoSuidDev | (m.read_only ? MS_RDONLY : 0) | (m.no_exec ? MS_NOEXEC : 0), m.data.c_str(), dst);
    }
    close(target);
  }
  close(rootfd);
}

void mount_proc_dev_sys(const ChildPlan& plan) {
  int rootfd = open_root(plan);
  int proc = open_system_dir(plan, rootfd, "proc");
  mount_at_fd(plan, "proc", proc, "proc", kNoSuidDev | MS_NOEXEC, nullptr, "proc on /proc");
  int dev = open_system_dir(plan, rootfd, "dev");
  mount_at_fd(plan, "tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=755,size=65536k",
              "tmpfs on /dev");
  close(dev);
  char dev_path[PATH_MAX];
  snprintf(dev_path, sizeof dev_path, "%s/dev", plan.root_dir.c_str());
  int devfd = open(dev_path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (devfd < 0) child_fail(plan, "open %s", dev_path);
  make_device_nodes(plan, devfd);
  make_dev_links_and_dirs(plan, devfd);
  close(devfd);
  int sys = open_system_dir(plan, rootfd, "sys");
  if (plan.own_user_ns && plan.host_network) {
    // sysfs may only be mounted by the user namespace that owns the network namespace; the
    // host's belongs to the host, so its /sys is bound (recursively: the host's submounts are
    // locked to it) and made read-only.
    mount_at_fd(plan, "/sys", sys, nullptr, MS_BIND | MS_REC, nullptr,
                "/sys (bound from the host)");
    close(sys);
    sys = open_system_dir(plan, rootfd, "sys");
    remount_read_only(plan, sys, kNoSuidDev | MS_NOEXEC, "/sys");
  } else {
    mount_at_fd(plan, "sysfs", sys, "sysfs", kNoSuidDev | MS_NOEXEC | MS_RDONLY, nullptr,
                "sysfs on /sys (read-only)");
  }
  close(sys);
  close(proc);
  close(rootfd);
}

void pivot_into_rootfs(const ChildPlan& plan) {
  // pivot_root(".", ".") stacks the old root under the new one; unmounting "." then drops it,
  // with no directory needed for the old root inside the image.
  if (chdir(plan.root_dir.c_str()) < 0) child_fail(plan, "chdir %s", plan.root_dir.c_str());
  if (syscall(SYS_pivot_root, ".", ".") < 0)
    child_fail(plan, "pivot_root into %s", plan.root_dir.c_str());
  if (umount2(".", MNT_DETACH) < 0) child_fail(plan, "detach the old root");
  if (chdir("/") < 0) child_fail(plan, "chdir / after pivot_root");
}

void make_root_read_only(const ChildPlan& plan) {
  if (!plan.readonly_root) return;
  // Only the root's own mount: what is mounted on it (/dev, /dev/shm, /proc, tmpfs, volumes)
  // keeps its flags. nosuid,nodev as the overlay was mounted (a bind remount sets all flags).
  if (mount(nullptr, "/", nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY | kNoSuidDev, nullptr) < 0)
    child_fail(plan, "remount / read-only");
}

namespace {

// CVE-2025-31133 class: binding "/dev/null" by name binds whatever that name is at that moment,
// and a process sharing /dev (a volume) can have swapped it for a symlink to core_pattern. The
// source is a /dev/null we opened ourselves, checked to be the null device, and every mount of
// this step goes by fd (open_tree, fsmount, move_mount): no name, and no /proc/self/fd, is
// resolved after the fd was checked.
int open_verified_null(const ChildPlan& plan) {
  // After pivot_root (or chroot): "/" is the container's root.
  int null = open_beneath(AT_FDCWD, "/dev/null", O_PATH, RESOLVE_NO_SYMLINKS);
  struct stat st {};
  if (null < 0 || fstat(null, &st) < 0) child_fail(plan, "open /dev/null to mask paths with");
  if (!S_ISCHR(st.st_mode) || st.st_rdev != makedev(1, 3)) {
    errno = EPERM;
    child_fail(plan, "/dev/null is not the null device (char 1:3); refusing to mask paths with it");
  }
  return null;
}

void attach_detached(const ChildPlan& plan, int tree, int target, const char* what) {
  if (tree < 0) child_fail(plan, "prepare the mount for %s", what);
  if (syscall(SYS_move_mount, tree, "", target, "",
              MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
    child_fail(plan, "mount over %s", what);
  close(tree);
}

int empty_read_only_tmpfs() {
  int context = static_cast<int>(syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC));
  if (context < 0) return -1;
  int tree = -1;
  if (syscall(SYS_fsconfig, context, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) == 0)
    tree = static_cast<int>(
        syscall(SYS_fsmount, context, FSMOUNT_CLOEXEC,
                MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC));
  close(context);
  return tree;
}

int read_only_clone(int fd) {
  int tree = static_cast<int>(syscall(
      SYS_open_tree, fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE));
  if (tree < 0) return -1;
  mount_attr attr{};
  attr.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
  if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) < 0) {
    close(tree);
    return -1;
  }
  return tree;
}

}  // namespace

void mask_and_protect_paths(const ChildPlan& plan) {
  int null = plan.masked_paths.empty() ? -1 : open_verified_null(plan);
  for (const std::string& path : plan.masked_paths) {
    int fd = open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) continue;
    if (fd < 0) child_fail(plan, "open masked path %s", path.c_str());
    struct stat st;
    if (fstat(fd, &st) < 0) child_fail(plan, "stat masked path %s", path.c_str());
    int tree = S_ISDIR(st.st_mode)
                   ? empty_read_only_tmpfs()
                   : static_cast<int>(syscall(SYS_open_tree, null, "",
                                              OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH));
    attach_detached(plan, tree, fd, path.c_str());
    close(fd);
  }
  if (null >= 0) close(null);
  for (const std::string& path : plan.readonly_paths) {
    int fd = open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) continue;
    if (fd < 0) child_fail(plan, "open read-only path %s", path.c_str());
    attach_detached(plan, read_only_clone(fd), fd, path.c_str());
    close(fd);
  }
}

}  // namespace sandcell::runtime
