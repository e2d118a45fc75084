// The parts of ImageStore beside the OCI layout: layers unpacked once for overlay, and prune.
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>
#include <set>

#include "fs_tree.hpp"
#include "sandcell/rootfs_builder/digest.hpp"
#include "sandcell/rootfs_builder/layer_tar.hpp"
#include "sandcell/rootfs_builder/store.hpp"
#include "sandcell/base/error.hpp"
#include "store_index.hpp"

namespace sandcell::rootfs_builder {
namespace {

struct Referenced {
  std::set<std::string> blobs;     // hex
  std::set<std::string> diff_ids;  // hex
};

Referenced referenced_by_tags(const ImageStore& store, const OciIndex& index) {
  Referenced refs;
  for (const Descriptor& d : index.manifests) {
    refs.blobs.insert(digest_hex(d.digest));
    if (d.media_type != media_type::kOciManifest && d.media_type != media_type::kDockerManifest)
      continue;
    Manifest m = manifest_from_json(store.read_blob(d.digest));
    refs.blobs.insert(digest_hex(m.config.digest));
    for (const Descriptor& l : m.layers) refs.blobs.insert(digest_hex(l.digest));
    for (const std::string& diff_id : config_from_json(store.read_blob(m.config.digest)).diff_ids)
      if (is_valid_digest(diff_id)) refs.diff_ids.insert(digest_hex(diff_id));
  }
  return refs;
}

std::uint64_t tree_bytes(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return 0;
  std::uint64_t total = static_cast<std::uint64_t>(st.st_blocks) * 512;
  if (S_ISDIR(st.st_mode))
    for (const auto& name : list_dir(path)) total += tree_bytes(path + "/" + name);
  return total;
}

// Temp files of a writer that crashed. A day old at least: a live writer may be mid-way.
void remove_stale_temp_files(const std::string& tmp_dir, PruneStats& stats) {
  std::time_t cutoff = std::time(nullptr) - 24 * 3600;
  for (const auto& name : list_dir(tmp_dir)) {
    std::string path = tmp_dir + "/" + name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || st.st_mtime > cutoff) continue;
    stats.bytes_freed += tree_bytes(path);
    remove_tree(path);
  }
}

}  // namespace

std::string ImageStore::unpacked_layer(const std::string& diff_id, const Descriptor& layer) {
  std::string dir = root_ + "/layers/" + digest_hex(diff_id);
  if (::access(dir.c_str(), F_OK) == 0) return dir;
  FileLock lock(root_ + "/layers/.lock", true);
  if (::access(dir.c_str(), F_OK) == 0) return dir;  // another process unpacked it meanwhile
  // The directory is named by the diff_id and shared by every image that lists it: what is
  // unpacked there must be that diff_id, whichever manifest asked (a manifest naming one blob
  // under another image's diff_id would otherwise replace that image's files).
  if (std::string actual = layer_diff_id(blob_path(layer.digest)); actual != diff_id)
    throw Error::invalid("layer " + layer.digest + " unpacks to " + actual + ", not to the diff_id " + diff_id +
                         " its image names");
  TempDir tmp(root_ + "/layers", ".tmp-");
  // The layer's root is the container's "/": 0755, whatever the tar says.
  if (::chmod(tmp.path().c_str(), 0755) != 0) throw Error(errno, "chmod " + tmp.path());
  extract_layer(blob_path(layer.digest), tmp.path(), {});
  rename_durably(tmp.path(), dir);
  tmp.release();
  return dir;
}

std::vector<std::string> ImageStore::unpacked_layers(const ImageRecord& image) {
  const auto& diff_ids = image.config.diff_ids;
  if (diff_ids.size() != image.manifest.layers.size())
    throw Error::invalid(image.name + ": config has " + std::to_string(diff_ids.size()) +
                         " diff_ids for " + std::to_string(image.manifest.layers.size()) +
                         " layers");
  std::vector<std::string> dirs;
  for (std::size_t i = 0; i < diff_ids.size(); ++i)
    dirs.push_back(unpacked_layer(diff_ids[i], image.manifest.layers[i]));
  return dirs;
}

PruneStats ImageStore::prune() {
  FileLock gc(root_ + "/gc.lock", true);  // no build between blob and tag, no run on a layer
  return prune_holding_gc_lock();
}

std::optional<PruneStats> ImageStore::prune_if_idle() {
  FileLock gc(root_ + "/gc.lock", true, FileLock::Wait::No);
  if (!gc.held()) return std::nullopt;
  return prune_holding_gc_lock();
}

PruneStats ImageStore::prune_holding_gc_lock() {
  FileLock index_lock(root_ + "/index.json.lock", true);
  FileLock layers_lock(root_ + "/layers/.lock", true);
  Referenced refs = referenced_by_tags(*this, OciIndex::load(root_ + "/index.json"));
  PruneStats stats;
  std::string blobs = root_ + "/blobs/sha256";
  for (const auto& hex : list_dir(blobs)) {
    if (refs.blobs.contains(hex)) continue;
    stats.bytes_freed += tree_bytes(blobs + "/" + hex);
    remove_tree(blobs + "/" + hex);
    ++stats.blobs_removed;
  }
  std::string layers = root_ + "/layers";
  for (const auto& name : list_dir(layers)) {
    if (name == ".lock" || refs.diff_ids.contains(name)) continue;
    stats.bytes_freed += tree_bytes(layers + "/" + name);
    remove_tree(layers + "/" + name);
    if (!name.starts_with(".tmp-")) ++stats.layers_removed;
  }
  runtime::remove_abandoned_temp_dirs(tmp_dir());  // what a killed builder left, at once
  remove_stale_temp_files(tmp_dir(), stats);
  return stats;
}

}  // namespace sandcell::rootfs_builder
