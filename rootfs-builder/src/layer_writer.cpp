// An overlay upper directory -> an OCI layer tar (image-spec layer.md, "Whiteouts"), gzip
// compressed. The tar bytes are hashed (diff_id) on their way into the gzip sink (digest):
// one pass, no temp file.
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <map>
#include <utility>

#include "file_chunks.hpp"
#include "fs_tree.hpp"
#include "gzip_sink.hpp"
#include "sandcell/base/loaded_libs.hpp"
#include "sandcell/rootfs_builder/layer_tar.hpp"
#include "unique_fd.hpp"

namespace sandcell::rootfs_builder {
namespace {

using EntryPtr = std::unique_ptr<archive_entry, decltype(&archive_entry_free)>;

bool is_overlay_xattr(std::string_view name) {
  return name.starts_with("trusted.overlay.") || name.starts_with("user.overlay.");
}

std::map<std::string, std::string> read_xattrs(const std::string& path) {
  std::map<std::string, std::string> out;  // sorted: llistxattr order is not stable
  ssize_t len = ::llistxattr(path.c_str(), nullptr, 0);
  if (len < 0 && (errno == ENOTSUP || errno == EOPNOTSUPP)) return out;
  if (len < 0) throw Error(errno, "llistxattr " + path);
  std::string names(static_cast<std::size_t>(len), '\0');
  len = ::llistxattr(path.c_str(), names.data(), names.size());
  if (len < 0) throw Error(errno, "llistxattr " + path);
  for (std::size_t pos = 0; pos < static_cast<std::size_t>(len);) {
    std::string name(names.c_str() + pos);
    pos += name.size() + 1;
    if (is_overlay_xattr(name)) continue;
    ssize_t vlen = ::lgetxattr(path.c_str(), name.c_str(), nullptr, 0);
    if (vlen < 0) continue;  // removed meanwhile, or not readable by us
    std::string value(static_cast<std::size_t>(vlen), '\0');
    vlen = ::lgetxattr(path.c_str(), name.c_str(), value.data(), value.size());
    if (vlen < 0) continue;
    value.resize(static_cast<std::size_t>(vlen));
    out.emplace(std::move(name), std::move(value));
  }
  return out;
}

bool is_opaque_dir(const std::string& path) {
  // "y" only: newer kernels also write "x" (directory has whiteouts inside), which is not opaque.
  for (const char* name : {"trusted.overlay.opaque", "user.overlay.opaque"}) {
    char value[2] = {};
    if (::lgetxattr(path.c_str(), name, value, sizeof value) == 1 && value[0] == 'y') return true;
  }
  return false;
}

bool is_whiteout(const struct stat& st) {
  return S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0);
}

class LayerTarWriter {
 public:
  LayerTarWriter(GzipSink& gz, const LayerWriteOptions& options);
  void add_tree(const std::string& upper_dir) { walk(upper_dir, ""); }
  std::string finish();

 private:
  static la_ssize_t on_write(archive* a, void* self, const void* buf, size_t size);
  void walk(const std::string& dir_path, const std::string& rel_dir);
  void add(const std::string& path, const std::string& rel, const struct stat& st);
  void add_whiteout(const std::string& rel, const struct stat& st);
  void add_opaque_marker(const std::string& rel_dir, const struct stat& st);
  EntryPtr base_entry(const std::string& rel, const struct stat& st) const;
  void write_header(archive_entry* entry, const std::string& rel);
  void write_file_data(const std::string& path, const std::string& rel);

  GzipSink& gz_;
  LayerWriteOptions options_;
  ArchiveWriter tar_;
  Sha256 diff_;
  std::map<std::pair<dev_t, ino_t>, std::string> first_link_;
};

LayerTarWriter::LayerTarWriter(GzipSink& gz, const LayerWriteOptions& options)
    : gz_(gz), options_(options), tar_(libarchive().write_new()) {
  archive* a = tar_.get();
  if (a == nullptr) throw Error(ENOMEM, "archive_write_new");
  // pax restricted: plain ustar headers unless an entry needs more (long names, xattrs).
  if (libarchive().write_set_format(a, ARCHIVE_FORMAT_TAR_PAX_RESTRICTED) != ARCHIVE_OK ||
      libarchive().write_set_bytes_in_last_block(a, 1) != ARCHIVE_OK ||
      libarchive().write_open(a, this, nullptr, &LayerTarWriter::on_write, nullptr) != ARCHIVE_OK)
    throw archive_error(a, "open layer tar writer");
}

la_ssize_t LayerTarWriter::on_write(archive* a, void* self, const void* buf, size_t size) {
  auto* w = static_cast<LayerTarWriter*>(self);
  try {
    w->diff_.update(buf, size);
    w->gz_.write(buf, size);
  } catch (const Error& e) {
    libarchive().set_error(a, e.code().value(), "%s", e.what());
    return -1;
  }
  return static_cast<la_ssize_t>(size);
}

std::string LayerTarWriter::finish() {
  if (libarchive().write_close(tar_.get()) != ARCHIVE_OK)
    throw archive_error(tar_.get(), "close layer tar");
  return diff_.finish();
}

void LayerTarWriter::walk(const std::string& dir_path, const std::string& rel_dir) {
  for (const std::string& name : list_dir(dir_path)) {
    std::string path = dir_path + "/" + name;
    std::string rel = rel_dir.empty() ? name : rel_dir + "/" + name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) throw Error(errno, "lstat " + path);
    add(path, rel, st);
    if (S_ISDIR(st.st_mode)) walk(path, rel);
  }
}

void LayerTarWriter::add(const std::string& path, const std::string& rel, const struct stat& st) {
  if (S_ISSOCK(st.st_mode)) return;  // tar cannot carry sockets; Docker drops them too
  if (is_whiteout(st)) return add_whiteout(rel, st);
  EntryPtr entry = base_entry(S_ISDIR(st.st_mode) ? rel + "/" : rel, st);
  archive_entry* e = entry.get();
  bool has_data = false;
  if (S_ISREG(st.st_mode) && st.st_nlink > 1) {
    auto [it, first] = first_link_.emplace(std::pair{st.st_dev, st.st_ino}, rel);
    if (!first) libarchive().entry_copy_hardlink(e, it->second.c_str());
    has_data = first;
  } else if (S_ISREG(st.st_mode)) {
    has_data = true;
  }
  if (has_data) libarchive().entry_set_size(e, st.st_size);
  if (S_ISLNK(st.st_mode)) {
    std::string target(static_cast<std::size_t>(st.st_size) + 1, '\0');
    ssize_t n = ::readlink(path.c_str(), target.data(), target.size());
    if (n < 0) throw Error(errno, "readlink " + path);
    target.resize(static_cast<std::size_t>(n));
    libarchive().entry_copy_symlink(e, target.c_str());
  }
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) libarchive().entry_set_rdev(e, st.st_rdev);
  for (const auto& [name, value] : read_xattrs(path))
    libarchive().entry_xattr_add_entry(e, name.c_str(), value.data(), value.size());
  write_header(e, rel);
  if (has_data) write_file_data(path, rel);
  if (S_ISDIR(st.st_mode) && is_opaque_dir(path)) add_opaque_marker(rel, st);
}

EntryPtr LayerTarWriter::base_entry(const std::string& rel, const struct stat& st) const {
  EntryPtr entry(libarchive().entry_new(), libarchive().entry_free);
  archive_entry* e = entry.get();
  libarchive().entry_copy_pathname(e, rel.c_str());
  libarchive().entry_set_mode(e, st.st_mode);
  libarchive().entry_set_uid(e, st.st_uid);
  libarchive().entry_set_gid(e, st.st_gid);
  std::int64_t mtime = st.st_mtim.tv_sec;
  if (options_.mtime_clamp && mtime > *options_.mtime_clamp) mtime = *options_.mtime_clamp;
  // Whole seconds only, no atime/ctime: pax-restricted then writes no time records at all.
  libarchive().entry_set_mtime(e, mtime, 0);
  return entry;
}

// OCI whiteout: an empty regular file ".wh.<name>" next to where <name> was.
void LayerTarWriter::add_whiteout(const std::string& rel, const struct stat& st) {
  auto slash = rel.rfind('/');
  std::string wh = slash == std::string::npos
                       ? ".wh." + rel
                       : rel.substr(0, slash + 1) + ".wh." + rel.substr(slash + 1);
  struct stat file = st;
  file.st_mode = S_IFREG | 0600;
  EntryPtr entry = base_entry(wh, file);
  libarchive().entry_set_size(entry.get(), 0);
  write_header(entry.get(), wh);
}

// OCI opaque whiteout: "<dir>/.wh..wh..opq" hides everything below <dir> in lower layers.
void LayerTarWriter::add_opaque_marker(const std::string& rel_dir, const struct stat& st) {
  struct stat file = st;
  file.st_mode = S_IFREG | 0600;
  std::string marker = rel_dir + "/.wh..wh..opq";
  EntryPtr entry = base_entry(marker, file);
  libarchive().entry_set_size(entry.get(), 0);
  write_header(entry.get(), marker);
}

void LayerTarWriter::write_header(archive_entry* entry, const std::string& rel) {
  if (libarchive().write_header(tar_.get(), entry) < ARCHIVE_WARN)
    throw archive_error(tar_.get(), "tar header " + rel);
}

void LayerTarWriter::write_file_data(const std::string& path, const std::string& rel) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) throw Error(errno, "open " + path);
  for_each_chunk(fd.get(), path, [&](const char* data, size_t size) {
    if (libarchive().write_data(tar_.get(), data, size) < 0)
      throw archive_error(tar_.get(), "tar data " + rel);
  });
}

}  // namespace

LayerDigests write_layer_from_upper(const std::string& upper_dir, const std::string& out_path,
                                    const LayerWriteOptions& options) {
  UniqueFd out(::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!out) throw Error(errno, "create " + out_path);
  GzipSink gz(out.get());
  LayerTarWriter tar(gz, options);
  tar.add_tree(upper_dir);
  LayerDigests result;
  result.diff_id = tar.finish();
  result.digest = gz.finish();
  result.size = gz.size();
  if (::fsync(out.get()) != 0) throw Error(errno, "fsync " + out_path);
  return result;
}

}  // namespace sandcell::rootfs_builder
