#pragma once
// A deterministic gzip stream into a file descriptor, hashing what it writes: libarchive's
// gzip filter over its "raw" format at level 1 (layer_gzip.cpp says why), with the header
// timestamp off (RFC 1952 MTIME = 0) so the same input always gives the same bytes.
#include <cstdint>
#include <string>

#include "archive_handles.hpp"
#include "sandcell/rootfs_builder/digest.hpp"

namespace sandcell::rootfs_builder {

class GzipSink {
 public:
  explicit GzipSink(int out_fd);  // out_fd stays owned by the caller
  void write(const void* data, std::size_t size);
  // Writes the gzip trailer. Returns the digest of the compressed stream; size() its length.
  std::string finish();
  std::int64_t size() const { return size_; }

 private:
  static la_ssize_t on_write(archive* a, void* self, const void* buf, size_t size);

  ArchiveWriter writer_;
  int fd_;
  Sha256 sha_;
  std::int64_t size_ = 0;
};

// write(2) until all is written; throws Error naming step.
void write_all(int fd, const void* data, std::size_t size, const std::string& step);

}  // namespace sandcell::rootfs_builder
