#pragma once
// Owned libarchive handles and their error messages.
#include <archive.h>

#include <memory>
#include <string>

#include "sandcell/rootfs_builder/loaded_libs.hpp"
#include "sandcell/runtime/error.hpp"

namespace sandcell::rootfs_builder {

struct ArchiveReadFree {
  void operator()(archive* a) const { libarchive().read_free(a); }
};
struct ArchiveWriteFree {
  void operator()(archive* a) const { libarchive().write_free(a); }
};
using ArchiveReader = std::unique_ptr<archive, ArchiveReadFree>;
using ArchiveWriter = std::unique_ptr<archive, ArchiveWriteFree>;

// "step: libarchive's message", with libarchive's errno when it set one.
Error archive_error(archive* a, const std::string& step);

// A reader for tar archives, plain or compressed (gzip, zstd, xz, bzip2), opened on path.
ArchiveReader open_tar_reader(const std::string& path);
// A reader for the decompressed byte stream of path (libarchive "raw" format).
ArchiveReader open_raw_reader(const std::string& path);

}  // namespace sandcell::rootfs_builder
