// The entry points of archive_io.hpp: pick the format, then hand over to docker_archive.cpp
// or oci_archive.cpp; import_rootfs for plain root filesystem tarballs.
#include <sys/stat.h>
#include <unistd.h>

#include "archive_bundle.hpp"
#include "fs_tree.hpp"
#include "sandcell/rootfs_builder/archive_io.hpp"

namespace sandcell::rootfs_builder {
namespace {

uint64_t file_bytes(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw Error(errno, "stat " + path);
  return static_cast<uint64_t>(st.st_size);
}

}  // namespace

ArchiveFormat parse_archive_format(std::string_view text) {
  if (text == "docker-archive") return ArchiveFormat::DockerArchive;
  if (text == "oci-archive") return ArchiveFormat::OciArchive;
  throw Error::invalid("unknown archive format '" + std::string(text) +
                       "' (docker-archive or oci-archive)");
}

void save_images(ImageStore& store, const std::vector<std::string>& names,
                 const std::string& out_path, ArchiveFormat format) {
  if (names.empty()) throw Error::invalid("save: no image named");
  ImageStore::Lease hold = store.lease();
  std::vector<ImageRecord> images;
  for (const auto& name : names) images.push_back(store.resolve(name));
  TempDir scratch(store.tmp_dir(), "save-");
  ArchiveBundle bundle;
  if (format == ArchiveFormat::DockerArchive)
    save_docker_archive(store, images, bundle, scratch.path());
  else
    save_oci_archive(store, images, bundle);
  bundle.commit(out_path);
}

std::vector<std::string> load_images(ImageStore& store, const std::string& in_path,
                                     std::optional<uint64_t> max_unpacked_bytes) {
  store.require_free(file_bytes(in_path), "loading " + in_path);  // at least its own size, unpacked
  TempDir dir(store.tmp_dir(), "load-");
  extract_bundle(in_path, dir.path(), max_unpacked_bytes);
  // Docker 25+ archives have both: manifest.json is the one that covers every docker version.
  if (::access((dir.path() + "/manifest.json").c_str(), F_OK) == 0)
    return load_docker_archive(store, dir.path());
  if (::access((dir.path() + "/index.json").c_str(), F_OK) == 0)
    return load_oci_layout(store, dir.path());
  throw Error::invalid(
      in_path + ": neither a docker save archive (manifest.json) nor an OCI archive (index.json)");
}

std::string import_rootfs(ImageStore& store, const std::string& tar_path, const std::string& name) {
  ImageStore::Lease hold = store.lease();
  store.require_free(file_bytes(tar_path),
                     "importing " + tar_path);  // its blob: at most its size, gzipped
  StoredLayer layer = store_layer(store, tar_path, "");
  ImageConfig config;
  config.created = image_timestamp();
  config.architecture = host_architecture();
  config.config.env = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"};
  config.diff_ids = {layer.diff_id};
  config.history = {{.created = config.created,
                     .created_by = "sandcell import",
                     .author = {},
                     .comment = {},
                     .empty_layer = false}};
  return store.put_image(name, config, {layer.descriptor});
}

}  // namespace sandcell::rootfs_builder
