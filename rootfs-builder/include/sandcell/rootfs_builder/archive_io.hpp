#pragma once
// Moving images in and out of the store as files: `sandcell save`, `load`, `import`.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sandcell/rootfs_builder/store.hpp"

namespace sandcell::rootfs_builder {

enum class ArchiveFormat {
  // What `docker save` writes since Docker 25: an OCI layout with uncompressed layers plus the
  // classic manifest.json, which old and new docker, podman and skopeo all load.
  DockerArchive,
  // A tar of an OCI image layout (skopeo/podman "oci-archive"), layers as stored (gzip).
  OciArchive,
};
ArchiveFormat parse_archive_format(std::string_view text);  // "docker-archive" | "oci-archive"

// Writes the named images into one archive at out_path (atomically: temp + rename).
// Entries are sorted with fixed metadata, so the same images give the same bytes.
void save_images(ImageStore& store, const std::vector<std::string>& names,
                 const std::string& out_path, ArchiveFormat format);

// Loads a docker save archive (legacy <id>/layer.tar or Docker 25+ layout) or an OCI archive,
// gzip-compressed or plain. Layers are verified against the config's diff_ids and stored
// gzip-compressed. Returns the names tagged ("name:tag"); an untagged image is reported by its
// manifest digest (and goes with the next prune). max_unpacked_bytes bounds what the archive
// may unpack to (a gzip bomb); nullopt: 200 times its size, at least 1 GiB (layer_tar.hpp).
std::vector<std::string> load_images(ImageStore& store, const std::string& in_path,
                                     std::optional<uint64_t> max_unpacked_bytes = {});

// A root filesystem tarball as a single-layer image with a default config (`docker import`).
// Returns the manifest digest.
std::string import_rootfs(ImageStore& store, const std::string& tar_path, const std::string& name);

}  // namespace sandcell::rootfs_builder
