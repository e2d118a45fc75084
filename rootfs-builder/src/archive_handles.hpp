#pragma once
// Owned libarchive handles and their error messages.
#include <archive.h>

#include <cstdint>
#include <memory>
#include <string>

#include "sandcell/base/error.hpp"
#include "sandcell/base/loaded_libs.hpp"

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

// How many bytes a compressed file of `compressed_bytes` may decompress to (file data, sparse
// holes included): 200 times its size, at least 1 GiB. gzip and zstd reach ~1000:1 on zeros,
// so a 2 MB bomb (or a 10 KB tar declaring a 4 GiB sparse file) stops here; real layers are
// well below 20:1.
std::uint64_t decompressed_limit(std::uint64_t compressed_bytes);
// decompressed_limit of the file at path.
std::uint64_t decompressed_limit_of(const std::string& path);

// A reader for tar archives, plain or compressed (gzip, zstd, xz, bzip2, lz4), opened on path.
ArchiveReader open_tar_reader(const std::string& path);
// A reader for the decompressed byte stream of path (libarchive "raw" format).
ArchiveReader open_raw_reader(const std::string& path);

}  // namespace sandcell::rootfs_builder
