// Compression side of layers: the deterministic gzip sink, recompressing plain tars, and
// hashing decompressed streams for diff_ids.
#include <archive_entry.h>
#include <fcntl.h>
#include <unistd.h>

#include <array>

#include "gzip_sink.hpp"
#include "sandcell/base/loaded_libs.hpp"
#include "sandcell/rootfs_builder/layer_tar.hpp"
#include "unique_fd.hpp"

namespace sandcell::rootfs_builder {

void write_all(int fd, const void* data, std::size_t size, const std::string& step) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(errno, step);
    p += n;
    size -= static_cast<std::size_t>(n);
  }
}

// zlib's fastest level, not its default 6. Measured on the python skill's layers (1343, 364 and
// 327 MB of tar): level 6 took 94 s of CPU and gave 815 MB, level 1 40 s and 879 MB (8% more);
// gzip was 94 of the 215 user seconds of building every skill image (session 31). A layer is
// compressed at every build step and read locally far more often than it is pushed.
constexpr const char* kLayerGzipLevel = "1";

GzipSink::GzipSink(int out_fd) : writer_(libarchive().write_new()), fd_(out_fd) {
  archive* a = writer_.get();
  if (a == nullptr) throw Error(ENOMEM, "archive_write_new");
  if (libarchive().write_set_format_raw(a) != ARCHIVE_OK ||
      libarchive().write_add_filter_gzip(a) != ARCHIVE_OK ||
      libarchive().write_set_filter_option(a, "gzip", "timestamp", nullptr) != ARCHIVE_OK ||
      libarchive().write_set_filter_option(a, "gzip", "compression-level", kLayerGzipLevel) !=
          ARCHIVE_OK ||
      libarchive().write_set_bytes_in_last_block(a, 1) != ARCHIVE_OK)
    throw archive_error(a, "set up gzip writer");
  if (libarchive().write_open(a, this, nullptr, &GzipSink::on_write, nullptr) != ARCHIVE_OK)
    throw archive_error(a, "open gzip writer");
  std::unique_ptr<archive_entry, decltype(&archive_entry_free)> entry(libarchive().entry_new(),
                                                                      libarchive().entry_free);
  libarchive().entry_set_filetype(entry.get(), AE_IFREG);
  libarchive().entry_copy_pathname(entry.get(), "layer.tar");
  if (libarchive().write_header(a, entry.get()) != ARCHIVE_OK)
    throw archive_error(a, "gzip writer header");
}

la_ssize_t GzipSink::on_write(archive* a, void* self, const void* buf, size_t size) {
  auto* sink = static_cast<GzipSink*>(self);
  try {
    write_all(sink->fd_, buf, size, "write gzip stream");
  } catch (const Error& e) {
    libarchive().set_error(a, e.code().value(), "%s", e.what());
    return -1;
  }
  sink->sha_.update(buf, size);
  sink->size_ += static_cast<std::int64_t>(size);
  return static_cast<la_ssize_t>(size);
}

void GzipSink::write(const void* data, std::size_t size) {
  if (size == 0) return;
  if (libarchive().write_data(writer_.get(), data, size) != static_cast<la_ssize_t>(size))
    throw archive_error(writer_.get(), "gzip write");
}

std::string GzipSink::finish() {
  if (libarchive().write_close(writer_.get()) != ARCHIVE_OK)
    throw archive_error(writer_.get(), "gzip close");
  return sha_.finish();
}

namespace {

// Calls sink(data, size) for every block of the decompressed stream of path.
template <typename Sink>
void read_decompressed(const std::string& path, Sink&& sink) {
  ArchiveReader a = open_raw_reader(path);
  archive_entry* entry = nullptr;
  int r = libarchive().read_next_header(a.get(), &entry);
  if (r == ARCHIVE_EOF) return;  // an empty file decompresses to nothing
  if (r != ARCHIVE_OK) throw archive_error(a.get(), "read " + path);
  std::array<char, 1 << 16> buf{};
  const std::uint64_t limit = decompressed_limit_of(path);
  std::uint64_t total = 0;
  for (;;) {
    la_ssize_t n = libarchive().read_data(a.get(), buf.data(), buf.size());
    if (n < 0) throw archive_error(a.get(), "decompress " + path);
    if (n == 0) break;
    total += static_cast<std::uint64_t>(n);
    if (total > limit)
      throw Error::invalid("decompress " + path + ": more than " + std::to_string(limit >> 20) +
                           " MiB (200 times its size): refused as a decompression bomb");
    sink(buf.data(), static_cast<std::size_t>(n));
  }
}

UniqueFd create_file(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd) throw Error(errno, "create " + path);
  return fd;
}

}  // namespace

LayerDigests gzip_layer(const std::string& tar_path, const std::string& out_path) {
  UniqueFd out = create_file(out_path);
  GzipSink gz(out.get());
  Sha256 diff;
  read_decompressed(tar_path, [&](const char* data, std::size_t size) {
    diff.update(data, size);
    gz.write(data, size);
  });
  LayerDigests result;
  result.digest = gz.finish();
  result.size = gz.size();
  result.diff_id = diff.finish();
  if (::fsync(out.get()) != 0) throw Error(errno, "fsync " + out_path);
  return result;
}

std::string layer_diff_id(const std::string& layer_path) {
  Sha256 diff;
  read_decompressed(layer_path,
                    [&](const char* data, std::size_t size) { diff.update(data, size); });
  return diff.finish();
}

void decompress_layer(const std::string& layer_path, const std::string& out_path) {
  UniqueFd out = create_file(out_path);
  read_decompressed(layer_path, [&](const char* data, std::size_t size) {
    write_all(out.get(), data, size, "write " + out_path);
  });
}

bool is_gzip_file(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw Error(errno, "open " + path);
  unsigned char magic[2] = {};
  return ::read(fd.get(), magic, 2) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

}  // namespace sandcell::rootfs_builder
