#include "archive_handles.hpp"

#include "sandcell/rootfs_builder/loaded_libs.hpp"

namespace sandcell::rootfs_builder {
namespace {

// Explicit filters, not libarchive().read_support_filter_all(): that one may run external
// decompressors (lrzip, lzop, grzip) on untrusted input.
void support_layer_filters(archive* a) {
  libarchive().read_support_filter_gzip(a);
  libarchive().read_support_filter_zstd(a);
  libarchive().read_support_filter_xz(a);
  libarchive().read_support_filter_bzip2(a);
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

ArchiveReader open_tar_reader(const std::string& path) {
  return open_reader(path, false);
}
ArchiveReader open_raw_reader(const std::string& path) {
  return open_reader(path, true);
}

}  // namespace sandcell::rootfs_builder
