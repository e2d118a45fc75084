// A disk several processes use at once (shared_disk.hpp): flock'd users, one mount.
#include "sandcell/base/shared_disk.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "sandcell/base/error.hpp"

namespace sandcell {
namespace {

using runtime::UniqueFd;

UniqueFd open_lock(const std::string& path) {
  UniqueFd fd(open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) throw Error(errno, "open " + path);
  return fd;
}

void lock(int fd, int operation, const std::string& what) {
  while (flock(fd, operation) != 0)
    if (errno != EINTR) throw Error(errno, "flock " + what);
}

// dir/mount.lock, LOCK_EX, and still the one in `dir`: a rm that held it may have renamed the
// directory away meanwhile (then the volume is gone), and a new one made under the same name.
UniqueFd lock_mounting(const std::string& dir) {
  const std::string path = dir + "/mount.lock";
  UniqueFd fd = open_lock(path);
  lock(fd.get(), LOCK_EX, path);
  struct stat held {}, now {};
  check(fstat(fd.get(), &held), "fstat " + path);
  if (lstat(path.c_str(), &now) != 0 || now.st_ino != held.st_ino || now.st_dev != held.st_dev)
    throw Error(ENOENT, dir + " was removed");
  return fd;
}

// Whether nobody holds users LOCK_SH: then `users` holds LOCK_EX.
bool unused(const UniqueFd& users) {
  if (flock(users.get(), LOCK_EX | LOCK_NB) == 0) return true;
  if (errno == EWOULDBLOCK) return false;
  throw Error(errno, "flock users");
}

}  // namespace

bool SharedDisk::mounted(const std::string& dir) {
  struct stat point {}, parent {};
  if (lstat((dir + "/disk").c_str(), &point) != 0 || !S_ISDIR(point.st_mode)) return false;
  check(lstat(dir.c_str(), &parent), "stat " + dir);
  return point.st_dev != parent.st_dev;
}

std::unique_ptr<SharedDisk> SharedDisk::join(const std::string& templates_dir, const std::string& dir,
                                             uint64_t size_bytes) {
  UniqueFd mounting = lock_mounting(dir);
  // Only ever LOCK_EX'd under mount.lock, which we hold: LOCK_SH is granted at once.
  UniqueFd users = open_lock(dir + "/users");
  lock(users.get(), LOCK_SH, dir + "/users");
  std::unique_ptr<WorkspaceDisk> disk =
      mounted(dir) ? WorkspaceDisk::adopt(image(dir), dir + "/disk")
                   : WorkspaceDisk::session(templates_dir, image(dir), dir + "/disk", size_bytes);
  return std::unique_ptr<SharedDisk>(new SharedDisk(dir, std::move(users), std::move(disk)));
}

SharedDisk::~SharedDisk() {
  try {
    UniqueFd mounting = lock_mounting(dir_);
    users_.reset();  // our LOCK_SH goes
    UniqueFd users = open_lock(dir_ + "/users");
    if (!unused(users)) disk_->leave_mounted();
    disk_.reset();  // the last user's unmounts (WorkspaceDisk's destructor)
  } catch (const std::exception&) {
    // No lock to be had (the directory was removed under us, which rm never does to a used
    // disk): leave it mounted. gc unmounts it once no user runs.
    if (disk_) disk_->leave_mounted();
  }
}

std::optional<SharedDisk::Unused> SharedDisk::lock_unused(const std::string& dir) {
  Unused out;
  out.mount_lock = lock_mounting(dir);
  out.users = open_lock(dir + "/users");
  if (!unused(out.users)) return std::nullopt;
  if (mounted(dir)) {
    const std::string point = dir + "/disk";
    if (umount2(point.c_str(), 0) != 0 && umount2(point.c_str(), MNT_DETACH) != 0)
      throw Error(errno, "unmount " + point);
    out.was_mounted = true;
  }
  return out;
}

int unmount_unused_shared_disks(const std::string& root) {
  int n = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(root, ec)) {
    const std::string dir = entry.path().string();
    if (entry.path().filename().string().starts_with(".")) continue;
    try {
      if (!SharedDisk::mounted(dir)) continue;
      std::optional<SharedDisk::Unused> unused = SharedDisk::lock_unused(dir);
      n += unused && unused->was_mounted;
    } catch (const std::exception&) {  // removed meanwhile
    }
  }
  return n;
}

}  // namespace sandcell
