#pragma once
// The image store: an OCI image layout (image-spec image-layout.md) under the sandcell root,
//   <root>/oci-layout, <root>/index.json, <root>/blobs/sha256/<hex>
// plus what sandcell adds beside it:
//   <root>/layers/<diff_id hex>/  each layer unpacked once, an overlay lowerdir for every run
//   <root>/tmp/                   temp files, renamed into place when complete
// Every write is temp + fsync + rename, so a crash never leaves a half blob or index visible.
// index.json updates hold a flock, so parallel builds don't lose each other's tags; any tool
// reading OCI layouts (skopeo oci:<root>:name:tag, umoci) can read the store.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sandcell/rootfs_builder/image.hpp"

namespace sandcell::rootfs_builder {

struct ImageRecord {
  std::string name;  // "name:tag" as tagged; empty when resolved by digest only
  std::string manifest_digest;
  Manifest manifest;
  std::string manifest_json;  // the blob, byte for byte
  ImageConfig config;
  std::string config_json;
};

struct ImageSummary {
  std::string name;  // "name:tag"
  std::string manifest_digest;
  std::string config_digest;  // the image ID docker shows
  std::int64_t size = 0;      // compressed: config + layers
  std::string created;
};

struct PruneStats {
  std::uint64_t blobs_removed = 0;
  std::uint64_t layers_removed = 0;  // unpacked layer directories
  std::uint64_t bytes_freed = 0;
};

class ImageStore {
 public:
  explicit ImageStore(std::string root);  // creates the layout when missing

  const std::string& root() const { return root_; }
  // Where callers write files they hand to put_blob_file (same filesystem: rename works).
  std::string tmp_dir() const { return root_ + "/tmp"; }

  // Moves (a file under tmp_dir()) or copies a file into the blobs; verifies it against
  // expected_digest when one is given. Returns its digest.
  std::string put_blob_file(const std::string& path, std::string_view expected_digest = {});
  std::string put_blob(std::string_view data, std::string_view expected_digest = {});
  // Renames a file under tmp_dir() into the blobs as `digest`, which the caller computed while
  // writing it (downloads hash as they go; hashing 200 MB twice would double the wait).
  void put_hashed_blob_file(const std::string& tmp_path, std::string_view digest);
  bool has_blob(std::string_view digest) const;
  std::string blob_path(std::string_view digest) const;
  std::string read_blob(std::string_view digest) const;  // verifies the content's digest
  // Throws Error(ENOSPC) naming `what` when the store's filesystem has less than `bytes` free
  // beyond what it keeps free (5% of its size, at most 64 MiB): pulls, loads and imports ask
  // before they write, so a full disk is found before the first byte rather than half-way. A
  // disk that fills half-way anyway (another writer, an archive that expands) fails the write;
  // what was written lives only under tmp_dir() and goes with the error.
  void require_free(uint64_t bytes, const std::string& what) const;

  // Stores config and an OCI manifest over layers (already stored blobs), tags it `name`
  // (nothing tagged when name is empty). Returns the manifest digest.
  std::string put_image(const std::string& name, const ImageConfig& config,
                        const std::vector<Descriptor>& layers);
  // The same with the config given as JSON bytes, kept verbatim (loaded images keep their ID).
  std::string put_image_json(const std::string& name, std::string_view config_json,
                             const std::vector<Descriptor>& layers);
  // Tags an existing manifest blob. The manifest's media type goes into index.json.
  void set_tag(const std::string& name, const std::string& manifest_digest);

  // name[:tag], name@sha256:..., a manifest digest, or an image ID (config digest, or 12+ hex
  // characters of it). Throws Error::invalid naming the image when there is none.
  ImageRecord resolve(const std::string& name) const;
  void tag(const std::string& source, const std::string& target);
  void remove(const std::string& name);  // untags; blobs stay until prune()
  // Deletes blobs and unpacked layers no tag references, and stale temp files. Waits while a
  // lease is held (a build, a pull, a run).
  PruneStats prune();
  // The same now, or nullopt without waiting when a lease is held (the Docker API's rmi).
  std::optional<PruneStats> prune_if_idle();
  std::vector<ImageSummary> list() const;

  // The directory of layer `diff_id` unpacked (overlay whiteouts, see layer_tar.hpp), made on
  // first use; concurrent callers wait for one unpack.
  std::string unpacked_layer(const std::string& diff_id, const Descriptor& layer);
  // All layers of an image, bottom first (overlay wants lowerdir= top first: reverse them).
  std::vector<std::string> unpacked_layers(const ImageRecord& image);

  // A shared hold on the store: prune() waits while any lease is alive. Take one across a
  // build (blobs written before the tag exists) and across a run (layers in use as lowers).
  class Lease {
   public:
    explicit Lease(int fd) : fd_(fd) {}
    Lease(Lease&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    ~Lease();

   private:
    int fd_;
  };
  Lease lease() const;

 private:
  PruneStats prune_holding_gc_lock();
  std::string root_;
};

}  // namespace sandcell::rootfs_builder
