#include "archive_handles.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <vector>

#include "sandcell/base/loaded_libs.hpp"

namespace sandcell::rootfs_builder {
namespace {

using SupportFilter = int (*)(archive*);

// Whether libarchive decompresses this filter itself. Built without the filter's library, it
// registers the filter anyway and runs the external program (lz4, zstd, xz...) as root on the
// input, saying only ARCHIVE_WARN "Using external ... program".
bool in_process(SupportFilter support) {
  ArchiveReader probe(libarchive().read_new());
  return probe && support(probe.get()) == ARCHIVE_OK;
}

// Explicit filters, each only when in-process; never read_support_filter_all(), which adds
// external decompressors (lrzip, lzop, grzip) that run on untrusted input outside any sandbox.
void support_layer_filters(archive* a) {
  static const std::vector<SupportFilter> filters = [] {
    std::vector<SupportFilter> usable;
    for (SupportFilter f : {libarchive().read_support_filter_gzip, libarchive().read_support_filter_zstd,
                            libarchive().read_support_filter_xz, libarchive().read_support_filter_bzip2,
                            libarchive().read_support_filter_lz4})
      if (in_process(f)) usable.push_back(f);
    return usable;
  }();
  for (SupportFilter f : filters) f(a);
}

ArchiveReader open_reader(const std::string& path, bool raw) {
  ArchiveReader a(libarchive().read_new());
  if (!a) throw Error(ENOMEM, "archive_read_new");
  support_layer_filters(a.get());
  if (raw)
    libarchive().read_support_format_raw(a.get());
  else
    libarchive().read_support_format_tar(a.get());
  if (libarchive().read_open_filename(a.get(), path.c_str(), 1 << 16) != ARCHIVE_OK)
    throw archive_error(a.get(), "open archive " + path);
  return a;
}

}  // namespace

Error archive_error(archive* a, const std::string& step) {
  int err = libarchive().error_number(a);
  const char* message = libarchive().error_string(a);
  return Error(err > 0 ? err : EIO, message != nullptr ? step + ": " + message : step);
}

std::uint64_t decompressed_limit(std::uint64_t compressed_bytes) {
  constexpr std::uint64_t kFloor = std::uint64_t{1} << 30;
  constexpr std::uint64_t kRatio = 200;
  if (compressed_bytes > UINT64_MAX / kRatio) return UINT64_MAX;
  return std::max(kFloor, compressed_bytes * kRatio);
}

std::uint64_t decompressed_limit_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw Error(errno, "stat " + path);
  return decompressed_limit(static_cast<std::uint64_t>(st.st_size));
}

ArchiveReader open_tar_reader(const std::string& path) {
  return open_reader(path, false);
}
ArchiveReader open_raw_reader(const std::string& path) {
  return open_reader(path, true);
}

}  // namespace sandcell::rootfs_builder
