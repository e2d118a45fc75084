#pragma once
// `docker cp`: a running container's files as a tar, and a tar into them. Every path is resolved
// inside the container's root (runtime::open_sandbox_root) by openat2 RESOLVE_IN_ROOT |
// RESOLVE_NO_MAGICLINKS, so "..", absolute symlinks and /proc's magic links never lead out of it,
// and nothing is opened by a name the container could swap after it was checked.
#include <cstdint>
#include <string>

#include "sandcell/base/unique_fd.hpp"
#include "sandcell/rootfs_builder/layer_tar.hpp"

namespace sandcell::dockerapi {

// What Docker's X-Docker-Container-Path-Stat header carries (mode in Go's os.FileMode bits).
struct ContainerPathStat {
  std::string name;
  int64_t size = 0;
  uint32_t mode = 0;
  std::string mtime;  // RFC 3339
  std::string link_target;
};

// The path's own entry (a symlink is not followed). ApiError 404 when missing, 400 for a path on
// a kernel file system (/proc, /sys, ...): those are the host kernel's, read as sandcell's root.
ContainerPathStat stat_in_container(int root, const std::string& path);
std::string path_stat_header(const ContainerPathStat& stat);  // base64 of its JSON

// A plain tar of the path (a directory with everything below it on the same file system),
// named from the path's last component as Docker names it, into an unlinked temporary file in
// `scratch_dir`; returns it at offset 0.
runtime::UniqueFd tar_from_container(int root, const std::string& path,
                                     const std::string& scratch_dir);

// Extracts a tar (plain or compressed) into the directory `dir` of the container: entries are
// resolved inside that directory, device nodes and links out of it are refused (ApiError 400
// naming them), setuid and setgid bits are dropped, and the unpacked size is bounded (a tar bomb
// is refused). ApiError 404 when dir is missing, 400 when it is not a directory.
void untar_into_container(int root, const std::string& dir, const std::string& tar);

// ApiError 400 naming the first entry the extractor refused (and how many more), if any.
void refuse_rejected_entries(const rootfs_builder::ExtractStats& stats);

}  // namespace sandcell::dockerapi
