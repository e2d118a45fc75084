#pragma once
// A kept disk (workspace_disk.hpp) that several processes use at once, each for as long as it
// runs: a Docker API named volume that several containers' supervisors mount (docs/docker-api.md,
// "Volumes on a disk of their own"). Mounted while any user runs, unmounted when the last leaves.
// In its directory `dir` (which no sandbox can reach: a sandbox sees only disk/workspace):
//   disk.img     the image, made at the first join of its size, kept
//   disk/        its mount point while any user runs; the files are disk/workspace
//   users        each user holds flock LOCK_SH on it for as long as it runs
//   mount.lock   flock LOCK_EX while one process joins, leaves, or checks for users (rm, gc)
// The protocol, every step under mount.lock:
//   join   take users LOCK_SH; if disk/ is a mount point (st_dev differs from dir's, never a file
//          a sandbox could write), use that mount, else mount the image there.
//   leave  drop LOCK_SH; if users then takes LOCK_EX|LOCK_NB, nobody else uses it: unmount.
//   rm/gc  if users takes LOCK_EX|LOCK_NB, unmount what is mounted (a killed user's mount).
// So two joins never mount twice (the second sees the first's mount), a leave never unmounts
// under another user (its LOCK_SH makes LOCK_EX fail), and a user killed with SIGKILL frees its
// LOCK_SH with its fds: its mount is unmounted by gc, or used by the next join and unmounted
// when that one leaves. A killed process's flocks go with it, so no lock is ever stale.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "sandcell/base/unique_fd.hpp"
#include "sandcell/base/workspace_disk.hpp"

namespace sandcell {

class SharedDisk {
 public:
  // Joins the disk's users, mounting it (made of size_bytes when it has no image yet) when none
  // has. Throws naming `dir` when it was removed meanwhile or cannot be mounted.
  static std::unique_ptr<SharedDisk> join(const std::string& templates_dir, const std::string& dir,
                                          uint64_t size_bytes);
  ~SharedDisk();  // leaves: the last user unmounts
  SharedDisk(const SharedDisk&) = delete;
  SharedDisk& operator=(const SharedDisk&) = delete;

  const WorkspaceDisk& disk() const { return *disk_; }

  // The disk in `dir` held against every user (rm): mount.lock and users both LOCK_EX, the disk
  // unmounted. nullopt while a user runs.
  struct Unused {
    runtime::UniqueFd mount_lock, users;
    bool was_mounted = false;  // a killed user's mount, now unmounted
  };
  static std::optional<Unused> lock_unused(const std::string& dir);

  // The file names the API server shows (Mountpoint) and reads (the image's size on the host).
  static std::string workspace(const std::string& dir) { return dir + "/disk/workspace"; }
  static std::string image(const std::string& dir) { return dir + "/disk.img"; }
  static bool mounted(const std::string& dir);  // disk/ is a mount point

 private:
  SharedDisk(std::string dir, runtime::UniqueFd users, std::unique_ptr<WorkspaceDisk> disk)
      : dir_(std::move(dir)), users_(std::move(users)), disk_(std::move(disk)) {}

  std::string dir_;
  runtime::UniqueFd users_;
  std::unique_ptr<WorkspaceDisk> disk_;
};

// `sandcell gc`: unmounts the disks of the directories under `root` that are mounted with no
// user (a killed supervisor's). Returns how many; their loop devices detach with them.
int unmount_unused_shared_disks(const std::string& root);

}  // namespace sandcell
