// /proc writes through a checked procfs handle (proc_handle.hpp). The child-side functions run
// between clone and execve: no allocation, no exceptions.
#include "proc_handle.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "sandcell/base/error.hpp"

namespace sandcell::runtime {
namespace {

constexpr unsigned long long kStrictProc =
    RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS;

int openat2_in(int dirfd, const char* path, int flags, unsigned long long resolve) {
  open_how how{};
  how.flags = static_cast<unsigned long long>(flags) | O_CLOEXEC;
  how.resolve = resolve;
  return static_cast<int>(syscall(SYS_openat2, dirfd, path, &how, sizeof how));
}

// Closes `fd` and fails with EXDEV unless it lies on procfs.
int require_procfs(int fd) {
  if (fd < 0) return -1;
  struct statfs fs {};
  int err = fstatfs(fd, &fs) < 0 ? errno : 0;
  if (err == 0 && fs.f_type == PROC_SUPER_MAGIC) return fd;
  close(fd);
  errno = err != 0 ? err : EXDEV;
  return -1;
}

int fresh_procfs_mount() {
  int context = static_cast<int>(syscall(SYS_fsopen, "proc", FSOPEN_CLOEXEC));
  if (context < 0) return -1;
  int mount_fd = -1;
  if (syscall(SYS_fsconfig, context, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) == 0)
    mount_fd = static_cast<int>(syscall(SYS_fsmount, context, FSMOUNT_CLOEXEC,
                                        MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC));
  int err = errno;
  close(context);
  errno = err;
  return mount_fd;
}

}  // namespace

int open_private_procfs() {
  int fd = fresh_procfs_mount();
  if (fd < 0)
    fd = static_cast<int>(
        syscall(SYS_open_tree, AT_FDCWD, "/proc", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC));
  return require_procfs(fd);
}

int open_proc_file(int proc, const char* relative, int flags) {
  return require_procfs(openat2_in(proc, relative, flags, kStrictProc));
}

int open_proc_thread_self(int proc) {
  return require_procfs(openat2_in(proc, "thread-self", O_PATH | O_DIRECTORY,
                                   RESOLVE_BENEATH | RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS));
}

UniqueFd open_host_proc_file(const std::string& relative, int flags) {
  UniqueFd proc(require_procfs(open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC)));
  if (!proc) throw Error(errno, "open /proc (it must be procfs)");
  UniqueFd fd(open_proc_file(proc.get(), relative.c_str(), flags));
  if (!fd) throw Error(errno, "open /proc/" + relative + " beneath procfs, without symlinks");
  return fd;
}

void write_host_proc_file(const std::string& relative, const std::string& text) {
  UniqueFd fd = open_host_proc_file(relative, O_WRONLY);
  if (write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    throw Error(errno, "write /proc/" + relative);
}

}  // namespace sandcell::runtime
