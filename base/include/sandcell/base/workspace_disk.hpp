#pragma once
// A workspace on a filesystem of its own, so that what the code writes is bounded in bytes and in
// files (`--disk`; README "Disk limits"): a sparse ext4 image of exactly the bound, attached to a
// loop device and mounted nosuid,nodev for the call. Past it the program sees a full disk (ENOSPC),
// as on a small disk; the host's filesystem holds at most the image's size. Why ext4 on loop: it
// needs no host setup (project quotas need a filesystem mounted with prjquota; a tmpfs would be
// charged to the sandbox's memory and would not outlive the call, which a session needs).
//
// Cheap per call (README "Disk limits"): mke2fs runs once per size, for a template in
// <store>/disk-templates; a new image is a copy of the template's few data blocks, made after the
// loop device is attached (attaching fsyncs the file: while it is empty that writes no data), and
// the filesystem runs without barriers. Nothing of a scratch image reaches the host's disk unless
// the kernel's writeback gets to it.
//
// Loop devices are host-global: the device is attached with LO_FLAGS_AUTOCLEAR, so the kernel
// detaches it when the mount goes: the destructor, or unmount_stale_disks
// (sandcell/base/stale_disk_mounts.hpp) (`sandcell gc`, and every call on its way in) for a process
// that died while mounted. A scratch workspace's image has no name: it goes with the loop device.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "sandcell/base/stale_disk_mounts.hpp"

namespace sandcell {

// The smallest bound a disk can have: ext4's metadata alone needs a few MiB.
constexpr uint64_t kMinDiskBytes = 8 << 20;

class WorkspaceDisk {
 public:
  // A scratch workspace's disk: a new filesystem of size_bytes mounted at `mount_dir` (created),
  // its image an unnamed file (O_TMPFILE in mount_dir's parent), gone with the mount.
  static std::unique_ptr<WorkspaceDisk> scratch(const std::string& templates_dir,
                                                std::string mount_dir, uint64_t size_bytes);
  // A kept disk (a session's workspace, a Docker API container's writable layer): `image`
  // mounted at `mount_dir`; made of size_bytes when it does not exist (it keeps the size it was
  // made with), and kept.
  static std::unique_ptr<WorkspaceDisk> session(const std::string& templates_dir, std::string image,
                                                std::string mount_dir, uint64_t size_bytes);
  // A kept disk that is already mounted at `mount_dir` (by another process: a shared disk,
  // shared_disk.hpp): this object unmounts it as `session`'s would, unless leave_mounted().
  static std::unique_ptr<WorkspaceDisk> adopt(std::string image, std::string mount_dir);
  ~WorkspaceDisk();  // unmounts; the loop device detaches with the mount (LO_FLAGS_AUTOCLEAR)
  WorkspaceDisk(const WorkspaceDisk&) = delete;
  WorkspaceDisk& operator=(const WorkspaceDisk&) = delete;

  // The workspace is its directory "workspace" (lost+found stays out of sight).
  std::string workspace() const { return mount_dir_ + "/workspace"; }
  uint64_t size_bytes() const { return size_bytes_; }  // the image's size: the bound
  uint64_t used_bytes() const;
  // Fewer than 1 MiB of free blocks or no free inode: a write or a file creation got ENOSPC.
  bool full() const;
  // The destructor leaves the disk mounted: another process still uses it (shared_disk.hpp).
  void leave_mounted() { leave_mounted_ = true; }

  // Why this host cannot give a workspace its own filesystem (not root: mounting ext4 and
  // attaching loop devices need CAP_SYS_ADMIN in the initial user namespace; no
  // /dev/loop-control), or nothing.
  static std::optional<std::string> unavailable();

 private:
  WorkspaceDisk(std::string mount_dir, uint64_t size_bytes);
  void mount_loop(int loop_fd);

  std::string mount_dir_;
  std::string kept_image_;  // a session's: written back after the unmount
  uint64_t size_bytes_ = 0;
  bool leave_mounted_ = false;
};

// Bytes the host's filesystem holds for an image (its allocated blocks; the image is sparse).
uint64_t allocated_bytes(const std::string& path);

}  // namespace sandcell
