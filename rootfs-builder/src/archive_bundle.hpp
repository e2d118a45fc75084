#pragma once
// Pieces shared by the docker-archive and oci-archive readers and writers.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "archive_handles.hpp"
#include "sandcell/rootfs_builder/image.hpp"
#include "sandcell/rootfs_builder/store.hpp"
#include "unique_fd.hpp"

namespace sandcell::rootfs_builder {

// The outer tar of save: files added by name, written sorted, with fixed metadata (root-owned,
// 0644/0755, mtime SOURCE_DATE_EPOCH or 0), to a temp file renamed to out_path on commit().
class ArchiveBundle {
 public:
  void add_file(const std::string& name, const std::string& path);
  void add_bytes(const std::string& name, std::string data);
  bool contains(const std::string& name) const { return entries_.contains(name); }
  void commit(const std::string& out_path) const;

 private:
  struct Entry {
    std::string path;  // file to copy, or
    std::string data;  // bytes to write
  };
  std::map<std::string, Entry> entries_;
};

// A member of an extracted archive, opened inside its root (symlinks resolve in the root,
// never out of it). path() names the open file for APIs that take paths.
struct ArchiveMember {
  UniqueFd fd;
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd.get()); }
};
ArchiveMember open_member(const std::string& root, const std::string& rel);
std::string read_member(const std::string& root, const std::string& rel);

// Extracts an archive to be loaded into a fresh temp dir in the store (no whiteout handling,
// no ownership). Throws when the archive has hostile entries or unpacks to more than max_bytes
// (nullopt: extract_layer's default bound).
std::string extract_bundle(const std::string& archive_path, const std::string& dest,
                           std::optional<uint64_t> max_bytes = {});

// Stores a layer file (gzip kept as is, anything else recompressed with gzip) after checking
// its uncompressed content against expected_diff_id (when not empty). Returns the descriptor.
struct StoredLayer {
  Descriptor descriptor;
  std::string diff_id;
};
StoredLayer store_layer(ImageStore& store, const std::string& path,
                        const std::string& expected_diff_id);

// "docker.io/library/busybox:latest" -> "busybox:latest", "docker.io/x/y" -> "x/y".
std::string familiar_name(const std::string& name);
// The reverse, as containerd's io.containerd.image.name annotation wants it.
std::string qualified_name(const std::string& name);

std::vector<std::string> load_docker_archive(ImageStore& store, const std::string& dir);
std::vector<std::string> load_oci_layout(ImageStore& store, const std::string& dir);
// scratch: a directory for the uncompressed layers, alive until the bundle is committed.
void save_docker_archive(ImageStore& store, const std::vector<ImageRecord>& images,
                         ArchiveBundle& bundle, const std::string& scratch);
void save_oci_archive(ImageStore& store, const std::vector<ImageRecord>& images,
                      ArchiveBundle& bundle);

}  // namespace sandcell::rootfs_builder
