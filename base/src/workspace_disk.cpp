// A loop-mounted ext4 image per workspace (workspace_disk.hpp): a copy of a template mke2fs made
// once per size, on a loop device attached with LOOP_CONFIGURE (one ioctl, Linux 5.8) and
// LO_FLAGS_AUTOCLEAR.
#include "sandcell/base/workspace_disk.hpp"

#include <fcntl.h>
#include <linux/loop.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <vector>

#include "sandcell/base/error.hpp"
#include "sandcell/base/rootless.hpp"
#include "sandcell/base/unique_fd.hpp"

extern char** environ;

namespace sandcell {
namespace {

namespace fs = std::filesystem;
using runtime::UniqueFd;

constexpr uint64_t kBytesPerInode = 16 << 10;  // mke2fs's own default ratio
constexpr uint64_t kFullSlack = 1 << 20;
// Each size a request asks for gets a template (~100 KiB on disk per GiB): the least recently
// used go past this many, so that requests of ever new sizes cannot fill the store.
constexpr size_t kMaxTemplates = 8;

// mke2fs (e2fsprogs) where root's PATH has it; a server's child may run with a narrower PATH.
std::optional<std::string> find_mke2fs() {
  for (const char* path : {"/usr/sbin/mke2fs", "/sbin/mke2fs", "/usr/bin/mke2fs", "/bin/mke2fs"})
    if (access(path, X_OK) == 0) return path;
  return std::nullopt;
}

// No journal: a workspace is scratch, and a journal would take 4+ MiB of the bound and the time
// to write it. -m 0: no blocks reserved for root (the sandbox's root would get them). No resize
// inode, no backup superblocks and the metadata packed at the start: a workspace never grows or
// gets fsck'd, and the image's data is then a handful of extents (112 KiB at 1 GiB) to copy.
void run_mke2fs(const std::string& image, uint64_t size_bytes) {
  const std::optional<std::string> mke2fs = find_mke2fs();
  if (!mke2fs) throw Error(ENOENT, "mke2fs (e2fsprogs) for a workspace disk");
  std::string inodes = std::to_string(std::max<uint64_t>(size_bytes / kBytesPerInode, 1024));
  const char* argv[] = {mke2fs->c_str(), "-q", "-F", "-t", "ext4", "-m", "0", "-N", inodes.c_str(),
                        "-O", "^has_journal,^resize_inode,sparse_super2",
                        "-E", "nodiscard,lazy_itable_init=1,num_backup_sb=0,packed_meta_blocks=1",
                        image.c_str(), nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  int err = posix_spawn(&pid, mke2fs->c_str(), &actions, nullptr, const_cast<char**>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) throw Error(err, "run " + *mke2fs + " for a workspace disk");
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw Error(errno, "wait for mke2fs");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) throw Error(EIO, "mke2fs " + image + " failed");
}

std::string template_path(const std::string& dir, uint64_t size_bytes) {
  return dir + "/ext4-" + std::to_string(size_bytes) + ".img";
}

// Past kMaxTemplates the least recently used templates go, and so do the leftovers of a process
// killed in mke2fs (".new-*" older than a minute).
void evict_templates(const std::string& dir) {
  std::vector<std::pair<fs::file_time_type, fs::path>> templates;
  std::error_code ec;
  const auto stale = fs::file_time_type::clock::now() - std::chrono::minutes(1);
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    fs::file_time_type mtime = e.last_write_time(ec);
    if (ec) continue;
    if (name.starts_with("ext4-")) templates.emplace_back(mtime, e.path());
    if (name.starts_with(".new-") && mtime < stale) fs::remove(e.path(), ec);
  }
  std::sort(templates.begin(), templates.end(), std::greater<>());
  for (size_t i = kMaxTemplates; i < templates.size(); ++i) fs::remove(templates[i].second, ec);
}

void make_template(const std::string& dir, uint64_t size_bytes) {
  fs::create_directories(dir);
  check(chmod(dir.c_str(), 0700), "chmod 0700 " + dir);
  std::string tmp = dir + "/.new-XXXXXX";
  {
    UniqueFd fd(mkostemp(tmp.data(), O_CLOEXEC));
    if (!fd) throw Error(errno, "create " + tmp);
    check(ftruncate(fd.get(), static_cast<off_t>(size_bytes)), "size " + tmp);
  }
  try {
    run_mke2fs(tmp, size_bytes);  // mke2fs fsyncs what it wrote
  } catch (...) {
    unlink(tmp.c_str());
    throw;
  }
  // Never a half-made template: concurrent calls each make their own, and the last rename wins.
  check(rename(tmp.c_str(), template_path(dir, size_bytes).c_str()), "rename " + tmp);
  evict_templates(dir);
}

// The template of size_bytes, made when there is none; its mtime says it was used.
UniqueFd open_template(const std::string& dir, uint64_t size_bytes) {
  const std::string path = template_path(dir, size_bytes);
  for (int attempt = 0;; ++attempt) {
    UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    struct stat st {};
    if (fd && fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode) &&
        static_cast<uint64_t>(st.st_size) == size_bytes) {
      futimens(fd.get(), nullptr);
      return fd;
    }
    if (attempt == 1) throw Error(fd ? EINVAL : errno, "open the workspace disk template " + path);
    make_template(dir, size_bytes);
  }
}

// The template's data extents into `to` (a fresh image is mostly holes: SEEK_DATA skips them).
void copy_data(int from, int to, const std::string& what) {
  for (off_t pos = 0;;) {
    off_t data = lseek(from, pos, SEEK_DATA);
    if (data < 0 && errno == ENXIO) return;  // no data past pos
    check(data, "SEEK_DATA in " + what);
    off_t end = check(lseek(from, data, SEEK_HOLE), "SEEK_HOLE in " + what);
    for (off_t in = data, out = data; in < end;) {
      ssize_t n = copy_file_range(from, &in, to, &out, static_cast<size_t>(end - in), 0);
      if (n <= 0) throw Error(n < 0 ? errno : EIO, "copy " + what);
    }
    pos = end;
  }
}

// A free loop device bound to `file`. Another process may take the free device between
// LOOP_CTL_GET_FREE and LOOP_CONFIGURE (EBUSY): ask again.
UniqueFd attach_loop(int file, const std::string& what) {
  UniqueFd control(open("/dev/loop-control", O_RDWR | O_CLOEXEC));
  if (!control) throw Error(errno, "open /dev/loop-control");
  for (int attempt = 0; attempt < 32; ++attempt) {
    int n = ioctl(control.get(), LOOP_CTL_GET_FREE);
    if (n < 0) throw Error(errno, "LOOP_CTL_GET_FREE");
    std::string dev = "/dev/loop" + std::to_string(n);
    UniqueFd loop(open(dev.c_str(), O_RDWR | O_CLOEXEC));
    if (!loop) throw Error(errno, "open " + dev);
    loop_config config{};
    config.fd = static_cast<uint32_t>(file);
    config.info.lo_flags = LO_FLAGS_AUTOCLEAR;
    if (ioctl(loop.get(), LOOP_CONFIGURE, &config) == 0) return loop;
    if (errno != EBUSY) throw Error(errno, "LOOP_CONFIGURE " + dev + " with " + what);
  }
  throw Error(EBUSY, "attach a loop device to " + what + ": every free one was taken");
}

// A new image in `file` (empty), attached to a loop device. Attaching fsyncs the file
// (LOOP_CONFIGURE): while it is empty that writes no data, and the template's blocks, copied in
// afterwards, never get places on the host's disk unless writeback gets to them (freeing those
// would cost a discard each on a store mounted with `discard`). The device has no size until
// LOOP_SET_CAPACITY: nothing (udev's blkid) can have read and cached its blocks before they were
// written.
UniqueFd attach_new_image(int file, const std::string& what, const std::string& templates_dir,
                          uint64_t size_bytes) {
  if (size_bytes < kMinDiskBytes)
    throw Error::invalid("--disk " + std::to_string(size_bytes) + " is too small (at least 8m)");
  UniqueFd from = open_template(templates_dir, size_bytes);
  UniqueFd loop = attach_loop(file, what);
  copy_data(from.get(), file, template_path(templates_dir, size_bytes) + " to " + what);
  check(ftruncate(file, static_cast<off_t>(size_bytes)), "size " + what);
  check(ioctl(loop.get(), LOOP_SET_CAPACITY, 0), "LOOP_SET_CAPACITY for " + what);
  return loop;
}

// A file for a scratch image that has no name: nothing to leave behind, and no directory entry
// for the fsync of LOOP_CONFIGURE to write out. Where the filesystem has no O_TMPFILE, a named one
// unlinked at once.
UniqueFd unnamed_file(const std::string& dir) {
  UniqueFd fd(open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
  if (fd || (errno != EOPNOTSUPP && errno != EISDIR)) {
    if (!fd) throw Error(errno, "create an image file in " + dir);
    return fd;
  }
  std::string path = dir + "/disk.img.XXXXXX";
  fd = UniqueFd(mkostemp(path.data(), O_CLOEXEC));
  if (!fd) throw Error(errno, "create " + path);
  check(unlink(path.c_str()), "unlink " + path);
  return fd;
}

// Whether a loop device still has `image` attached: the filesystem of a session's previous call,
// whose last reference went after its unmount (a sandbox's mount namespace torn down late). Its
// dirty blocks reach the image only when it goes; mounting the image again before would read it
// without them.
bool attached_to_a_loop(const std::string& image) {
  std::error_code ec;
  const std::string path = fs::weakly_canonical(image, ec).string();  // as the kernel names it
  for (const auto& dev : fs::directory_iterator("/sys/block", ec)) {
    std::ifstream backing(dev.path() / "loop/backing_file");
    std::string file;
    if (std::getline(backing, file) && file == path) return true;
  }
  return false;
}

void wait_until_detached(const std::string& image) {
  for (int waited_ms = 0; attached_to_a_loop(image); waited_ms += 10) {
    if (waited_ms >= 5000)
      throw Error(EBUSY, "the workspace disk " + image + " is still attached from an earlier call");
    usleep(10'000);
  }
}

struct statvfs stat_fs(const std::string& dir) {
  struct statvfs st {};
  check(statvfs(dir.c_str(), &st), "statvfs " + dir);
  return st;
}

}  // namespace

WorkspaceDisk::WorkspaceDisk(std::string mount_dir, uint64_t size_bytes)
    : mount_dir_(std::move(mount_dir)), size_bytes_(size_bytes) {}

std::unique_ptr<WorkspaceDisk> WorkspaceDisk::scratch(const std::string& templates_dir,
                                                      std::string mount_dir, uint64_t size_bytes) {
  const std::string dir = fs::path(mount_dir).parent_path().string();
  UniqueFd file = unnamed_file(dir);  // the loop device holds it, and it goes with the device
  UniqueFd loop = attach_new_image(file.get(), "an image in " + dir, templates_dir, size_bytes);
  std::unique_ptr<WorkspaceDisk> disk(new WorkspaceDisk(std::move(mount_dir), size_bytes));
  disk->mount_loop(loop.get());
  return disk;
}

std::unique_ptr<WorkspaceDisk> WorkspaceDisk::session(const std::string& templates_dir,
                                                      std::string image, std::string mount_dir,
                                                      uint64_t size_bytes) {
  UniqueFd loop;
  struct stat st {};
  if (stat(image.c_str(), &st) == 0) {
    size_bytes = static_cast<uint64_t>(st.st_size);  // a session keeps the size it was made with
    wait_until_detached(image);
    UniqueFd file(open(image.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
    if (!file) throw Error(errno, "open " + image);
    loop = attach_loop(file.get(), image);
  } else {
    const std::string tmp = image + ".new";  // under the session's lock
    UniqueFd file(open(tmp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!file) throw Error(errno, "create " + tmp);
    loop = attach_new_image(file.get(), tmp, templates_dir, size_bytes);
    check(rename(tmp.c_str(), image.c_str()), "rename " + tmp);  // never a half-made image
  }
  std::unique_ptr<WorkspaceDisk> disk(new WorkspaceDisk(std::move(mount_dir), size_bytes));
  disk->mount_loop(loop.get());
  disk->kept_image_ = std::move(image);
  return disk;
}

std::unique_ptr<WorkspaceDisk> WorkspaceDisk::adopt(std::string image, std::string mount_dir) {
  struct stat st {};
  check(stat(image.c_str(), &st), "stat " + image);
  std::unique_ptr<WorkspaceDisk> disk(new WorkspaceDisk(std::move(mount_dir), static_cast<uint64_t>(st.st_size)));
  disk->kept_image_ = std::move(image);
  return disk;
}

void WorkspaceDisk::mount_loop(int loop_fd) {
  if (mkdir(mount_dir_.c_str(), 0700) != 0 && errno != EEXIST)
    throw Error(errno, "mkdir " + mount_dir_);
  std::string dev = "/proc/self/fd/" + std::to_string(loop_fd);
  // nodev, nosuid: a file the sandbox made there must grant nothing on the host. nobarrier: no
  // flush of the image file at mount and unmount (no journal to order; workspace_disk.hpp).
  // noinit_itable: the inode tables of a sparse image read as zeros already, and zeroing them
  // would write 16 MiB per GiB into it. no_prefetch_block_bitmaps: with noinit_itable, no
  // ext4lazyinit thread to start per mount (on a busy host, a wait for a CPU).
  if (mount(dev.c_str(), mount_dir_.c_str(), "ext4", MS_NOSUID | MS_NODEV | MS_NOATIME,
            "nobarrier,noinit_itable,no_prefetch_block_bitmaps") != 0)
    throw Error(errno, "mount the workspace disk " + dev + " on " + mount_dir_);
  std::string ws = workspace();
  if (mkdir(ws.c_str(), 0755) != 0 && errno != EEXIST) {
    int err = errno;
    umount2(mount_dir_.c_str(), MNT_DETACH);
    throw Error(err, "mkdir " + ws);
  }
  chmod(ws.c_str(), 0755);
}

WorkspaceDisk::~WorkspaceDisk() {
  if (leave_mounted_) return;
  // Lazy only if something still holds it (a process of the sandbox that outlived it cannot:
  // its pid namespace is gone): the loop device detaches once the last user lets go.
  if (umount2(mount_dir_.c_str(), 0) != 0) umount2(mount_dir_.c_str(), MNT_DETACH);
  // The session's next call attaches the image, which fsyncs it (LOOP_CONFIGURE): what this call
  // wrote starts on its way to the disk now, while the caller reads the result, not then.
  if (kept_image_.empty()) return;
  UniqueFd image(open(kept_image_.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (image) sync_file_range(image.get(), 0, 0, SYNC_FILE_RANGE_WRITE);
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

}  // namespace sandcell
