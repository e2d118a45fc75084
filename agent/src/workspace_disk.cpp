// A loop-mounted ext4 image per workspace (workspace_disk.hpp): mke2fs makes the filesystem, the
// loop device is attached with LOOP_CONFIGURE (one ioctl, Linux 5.8) and LO_FLAGS_AUTOCLEAR.
#include "workspace_disk.hpp"

#include <fcntl.h>
#include <linux/loop.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "sandcell/base/error.hpp"
#include "sandcell/base/rootless.hpp"
#include "sandcell/base/unique_fd.hpp"

extern char** environ;

namespace sandcell::agent {
namespace {

using runtime::UniqueFd;

constexpr uint64_t kBytesPerInode = 16 << 10;  // mke2fs's own default ratio
constexpr uint64_t kFullSlack = 1 << 20;
constexpr uint64_t kMinBytes = 8 << 20;  // ext4's metadata alone needs a few MiB

// mke2fs (e2fsprogs) where root's PATH has it; a server's child may run with a narrower PATH.
std::optional<std::string> find_mke2fs() {
  for (const char* path : {"/usr/sbin/mke2fs", "/sbin/mke2fs", "/usr/bin/mke2fs", "/bin/mke2fs"})
    if (access(path, X_OK) == 0) return path;
  return std::nullopt;
}

// No journal: a workspace is scratch, and a journal would take 4+ MiB of the bound and the
// time to write it. -m 0: no blocks reserved for root (the sandbox's root would get them).
void make_filesystem(const std::string& image, uint64_t size_bytes) {
  std::string tmp = image + ".new";
  {
    UniqueFd fd(open(tmp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd) throw Error(errno, "create " + tmp);
    check(ftruncate(fd.get(), static_cast<off_t>(size_bytes)), "size " + tmp);
  }
  std::string inodes = std::to_string(std::max<uint64_t>(size_bytes / kBytesPerInode, 1024));
  const std::optional<std::string> mke2fs = find_mke2fs();
  if (!mke2fs) throw Error(ENOENT, "mke2fs (e2fsprogs) for a workspace disk");
  const char* argv[] = {mke2fs->c_str(),
                        "-q",
                        "-F",
                        "-t",
                        "ext4",
                        "-m",
                        "0",
                        "-N",
                        inodes.c_str(),
                        "-O",
                        "^has_journal",
                        "-E",
                        "nodiscard,lazy_itable_init=1",
                        tmp.c_str(),
                        nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  int err =
      posix_spawn(&pid, mke2fs->c_str(), &actions, nullptr, const_cast<char**>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) {
    unlink(tmp.c_str());
    throw Error(err, "run " + *mke2fs + " for a workspace disk");
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw Error(errno, "wait for mke2fs");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    unlink(tmp.c_str());
    throw Error(EIO, "mke2fs " + tmp + " failed");
  }
  check(rename(tmp.c_str(), image.c_str()), "rename " + tmp);  // never a half-made image
}

// A free loop device bound to `image`. Another process may take the free device between
// LOOP_CTL_GET_FREE and LOOP_CONFIGURE (EBUSY): ask again.
UniqueFd attach_loop(const std::string& image) {
  UniqueFd file(open(image.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
  if (!file) throw Error(errno, "open " + image);
  UniqueFd control(open("/dev/loop-control", O_RDWR | O_CLOEXEC));
  if (!control) throw Error(errno, "open /dev/loop-control");
  for (int attempt = 0; attempt < 32; ++attempt) {
    int n = ioctl(control.get(), LOOP_CTL_GET_FREE);
    if (n < 0) throw Error(errno, "LOOP_CTL_GET_FREE");
    std::string dev = "/dev/loop" + std::to_string(n);
    UniqueFd loop(open(dev.c_str(), O_RDWR | O_CLOEXEC));
    if (!loop) throw Error(errno, "open " + dev);
    loop_config config{};
    config.fd = static_cast<uint32_t>(file.get());
    config.info.lo_flags = LO_FLAGS_AUTOCLEAR;
    if (ioctl(loop.get(), LOOP_CONFIGURE, &config) == 0) return loop;
    if (errno != EBUSY) throw Error(errno, "LOOP_CONFIGURE " + dev + " with " + image);
  }
  throw Error(EBUSY, "attach a loop device to " + image + ": every free one was taken");
}

struct statvfs stat_fs(const std::string& dir) {
  struct statvfs st {};
  check(statvfs(dir.c_str(), &st), "statvfs " + dir);
  return st;
}

}  // namespace

WorkspaceDisk::WorkspaceDisk(std::string image, std::string mount_dir, uint64_t size_bytes)
    : image_(std::move(image)), mount_dir_(std::move(mount_dir)) {
  struct stat st;
  if (stat(image_.c_str(), &st) != 0) {
    if (size_bytes < kMinBytes)
      throw Error::invalid("--disk " + std::to_string(size_bytes) + " is too small (at least 8m)");
    make_filesystem(image_, size_bytes);
    size_bytes_ = size_bytes;
  } else {
    size_bytes_ = static_cast<uint64_t>(st.st_size);  // a session keeps the size it was made with
  }
  if (mkdir(mount_dir_.c_str(), 0700) != 0 && errno != EEXIST)
    throw Error(errno, "mkdir " + mount_dir_);
  UniqueFd loop = attach_loop(image_);
  std::string dev = "/proc/self/fd/" + std::to_string(loop.get());
  // nodev, nosuid: a file the sandbox made there must grant nothing on the host.
  if (mount(dev.c_str(), mount_dir_.c_str(), "ext4", MS_NOSUID | MS_NODEV | MS_NOATIME, "") != 0)
    throw Error(errno, "mount the workspace disk " + image_ + " on " + mount_dir_);
  std::string ws = workspace();
  if (mkdir(ws.c_str(), 0755) != 0 && errno != EEXIST) {
    int err = errno;
    umount2(mount_dir_.c_str(), MNT_DETACH);
    throw Error(err, "mkdir " + ws);
  }
  chmod(ws.c_str(), 0755);
}

WorkspaceDisk::~WorkspaceDisk() {
  // Lazy only if something still holds it (a process of the sandbox that outlived it cannot:
  // its pid namespace is gone): the loop device detaches once the last user lets go.
  if (umount2(mount_dir_.c_str(), 0) != 0) umount2(mount_dir_.c_str(), MNT_DETACH);
}

uint64_t WorkspaceDisk::used_bytes() const {
  struct statvfs st = stat_fs(mount_dir_);
  return static_cast<uint64_t>(st.f_blocks - st.f_bfree) * st.f_frsize;
}

bool WorkspaceDisk::full() const {
  struct statvfs st = stat_fs(mount_dir_);
  return static_cast<uint64_t>(st.f_bavail) * st.f_frsize < kFullSlack || st.f_favail == 0;
}

std::optional<std::string> WorkspaceDisk::unavailable() {
  // Rootless, sandcell is uid 0 of its own user namespace: the kernel mounts ext4 (a filesystem an
  // image could shape to attack it) and attaches loop devices only for the initial one.
  if (runtime::rootless() || geteuid() != 0)
    return "rootless: mounting a filesystem image needs root";
  if (access("/dev/loop-control", R_OK | W_OK) != 0) return "no /dev/loop-control on this host";
  if (!find_mke2fs()) return "no mke2fs (e2fsprogs) on this host";
  return std::nullopt;
}

uint64_t allocated_bytes(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_blocks) * 512 : 0;
}

}  // namespace sandcell::agent
