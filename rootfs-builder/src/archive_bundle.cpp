#include "archive_bundle.hpp"

#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <set>

#include "file_chunks.hpp"
#include "fs_tree.hpp"
#include "gzip_sink.hpp"
#include "sandcell/base/loaded_libs.hpp"
#include "sandcell/rootfs_builder/layer_tar.hpp"

namespace sandcell::rootfs_builder {
namespace {

using EntryPtr = std::unique_ptr<archive_entry, decltype(&archive_entry_free)>;

EntryPtr bundle_entry(const std::string& name, mode_t mode, std::int64_t size) {
  EntryPtr e(libarchive().entry_new(), libarchive().entry_free);
  libarchive().entry_copy_pathname(e.get(), name.c_str());
  libarchive().entry_set_mode(e.get(), mode);
  libarchive().entry_set_size(e.get(), size);
  libarchive().entry_set_mtime(e.get(), source_date_epoch().value_or(0), 0);
  return e;
}

void write_entry_file(archive* a, const std::string& name, const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0) throw Error(errno, "open " + path);
  if (libarchive().write_header(a, bundle_entry(name, S_IFREG | 0644, st.st_size).get()) !=
      ARCHIVE_OK)
    throw archive_error(a, "write " + name);
  for_each_chunk(fd.get(), path, [&](const char* data, size_t size) {
    if (libarchive().write_data(a, data, size) < 0) throw archive_error(a, "write " + name);
  });
}

void write_bundle(int fd, const std::map<std::string, std::string>& dirs,
                  const std::map<std::string, std::pair<std::string, std::string>>& files) {
  ArchiveWriter a(libarchive().write_new());
  if (libarchive().write_set_format(a.get(), ARCHIVE_FORMAT_TAR_PAX_RESTRICTED) != ARCHIVE_OK ||
      libarchive().write_open_fd(a.get(), fd) != ARCHIVE_OK)
    throw archive_error(a.get(), "open archive writer");
  std::set<std::string> names;
  for (const auto& [name, _] : dirs) names.insert(name);
  for (const auto& [name, _] : files) names.insert(name);
  for (const auto& name : names) {
    if (dirs.contains(name)) {
      if (libarchive().write_header(a.get(), bundle_entry(name, S_IFDIR | 0755, 0).get()) !=
          ARCHIVE_OK)
        throw archive_error(a.get(), "write " + name);
      continue;
    }
    const auto& [path, data] = files.at(name);
    if (!path.empty()) {
      write_entry_file(a.get(), name, path);
      continue;
    }
    if (libarchive().write_header(
            a.get(), bundle_entry(name, S_IFREG | 0644, std::ssize(data)).get()) != ARCHIVE_OK ||
        libarchive().write_data(a.get(), data.data(), data.size()) < 0)
      throw archive_error(a.get(), "write " + name);
  }
  if (libarchive().write_close(a.get()) != ARCHIVE_OK)
    throw archive_error(a.get(), "close archive");
}

}  // namespace

void ArchiveBundle::add_file(const std::string& name, const std::string& path) {
  entries_[name] = {path, {}};
}
void ArchiveBundle::add_bytes(const std::string& name, std::string data) {
  entries_[name] = {{}, std::move(data)};
}

void ArchiveBundle::commit(const std::string& out_path) const {
  std::map<std::string, std::string> dirs;
  std::map<std::string, std::pair<std::string, std::string>> files;
  for (const auto& [name, entry] : entries_) {
    files[name] = {entry.path, entry.data};
    for (auto slash = name.find('/'); slash != std::string::npos; slash = name.find('/', slash + 1))
      dirs[name.substr(0, slash + 1)] = {};
  }
  std::string tmp = out_path + ".tmp-XXXXXX";
  UniqueFd fd(::mkostemp(tmp.data(), O_CLOEXEC));
  if (!fd) throw Error(errno, "create " + tmp);
  try {
    write_bundle(fd.get(), dirs, files);
    if (::fchmod(fd.get(), 0644) != 0 || ::fsync(fd.get()) != 0) throw Error(errno, "sync " + tmp);
    rename_durably(tmp, out_path);
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
}

ArchiveMember open_member(const std::string& root, const std::string& rel) {
  UniqueFd dir(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) throw Error(errno, "open " + root);
  // O_NONBLOCK: a member that is a FIFO must fail the S_ISREG check below, not block the open.
  ArchiveMember member{UniqueFd(openat2_in_root(dir.get(), rel, O_RDONLY | O_NONBLOCK))};
  if (!member.fd) throw Error::invalid("archive member " + rel + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(member.fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    throw Error::invalid("archive member " + rel + " is not a regular file");
  return member;
}

std::string read_member(const std::string& root, const std::string& rel) {
  return read_file(open_member(root, rel).path());
}

std::string extract_bundle(const std::string& archive_path, const std::string& dest,
                           std::optional<uint64_t> max_bytes) {
  ExtractOptions options{.whiteouts = WhiteoutHandling::Keep,
                         .preserve_owner = false,
                         .opaque_xattr = {},
                         .max_bytes = max_bytes};
  ExtractStats stats = extract_layer(archive_path, dest, options);
  if (!stats.rejected.empty())
    throw Error::invalid(archive_path + ": refusing archive entry " + stats.rejected[0].path +
                         " (" + stats.rejected[0].reason + ")");
  return dest;
}

StoredLayer store_layer(ImageStore& store, const std::string& path,
                        const std::string& expected_diff_id) {
  StoredLayer layer;
  layer.descriptor.media_type = std::string(media_type::kOciLayerGzip);
  if (is_gzip_file(path)) {
    layer.diff_id = layer_diff_id(path);
    if (!expected_diff_id.empty() && layer.diff_id != expected_diff_id)
      throw Error::invalid("layer diff_id mismatch: config says " + expected_diff_id +
                           ", content is " + layer.diff_id);
    layer.descriptor.digest = store.put_blob_file(path);
  } else {
    std::string tmp = store.tmp_dir() + "/layer-XXXXXX";
    UniqueFd fd(::mkostemp(tmp.data(), O_CLOEXEC));
    if (!fd) throw Error(errno, "create temp file in " + store.tmp_dir());
    try {
      LayerDigests d = gzip_layer(path, tmp);
      if (!expected_diff_id.empty() && d.diff_id != expected_diff_id)
        throw Error::invalid("layer diff_id mismatch: config says " + expected_diff_id +
                             ", content is " + d.diff_id);
      layer.diff_id = d.diff_id;
      layer.descriptor.digest = store.put_blob_file(tmp, d.digest);
    } catch (...) {
      ::unlink(tmp.c_str());
      throw;
    }
  }
  struct stat st {};
  if (::stat(store.blob_path(layer.descriptor.digest).c_str(), &st) != 0)
    throw Error(errno, "stat layer blob");
  layer.descriptor.size = st.st_size;
  return layer;
}

std::string familiar_name(const std::string& name) {
  constexpr std::string_view kLibrary = "docker.io/library/", kHub = "docker.io/";
  if (name.starts_with(kLibrary) && name.find('/', kLibrary.size()) == std::string::npos)
    return name.substr(kLibrary.size());
  if (name.starts_with(kHub)) return name.substr(kHub.size());
  return name;
}

std::string qualified_name(const std::string& name) {
  auto slash = name.find('/');
  std::string first = slash == std::string::npos ? "" : name.substr(0, slash);
  bool has_host = first.find_first_of(".:") != std::string::npos || first == "localhost";
  if (has_host) return name;
  return slash == std::string::npos ? "docker.io/library/" + name : "docker.io/" + name;
}

}  // namespace sandcell::rootfs_builder
