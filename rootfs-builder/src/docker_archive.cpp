// docker save archives. Reading: manifest.json [{Config, RepoTags, Layers}] with paths into
// the archive, which covers the legacy layout (<id>/layer.tar, <hex>.json) and Docker 25+
// (blobs/sha256/<hex>). Writing: the Docker 25 layout, an OCI layout whose layers are the
// uncompressed tars plus manifest.json, as moby's image/tarexport writes it.
#include <sys/stat.h>

#include <map>
#include <nlohmann/json.hpp>

#include "archive_bundle.hpp"
#include "fs_tree.hpp"
#include "sandcell/rootfs_builder/digest.hpp"
#include "sandcell/rootfs_builder/layer_tar.hpp"
#include "sandcell/base/bounded_json.hpp"

namespace sandcell::rootfs_builder {
namespace {

using nlohmann::json;

std::vector<std::string> load_one(ImageStore& store, const std::string& dir, const json& item) {
  std::string config_json = read_member(dir, item.at("Config").get<std::string>());
  ImageConfig config = config_from_json(config_json);
  const json& layer_paths = item.at("Layers");
  if (layer_paths.size() != config.diff_ids.size())
    throw Error::invalid("docker archive: " + std::to_string(layer_paths.size()) + " layers but " +
                         std::to_string(config.diff_ids.size()) + " diff_ids in the config");
  std::vector<Descriptor> layers;
  for (std::size_t i = 0; i < layer_paths.size(); ++i) {
    ArchiveMember member = open_member(dir, layer_paths[i].get<std::string>());
    layers.push_back(store_layer(store, member.path(), config.diff_ids[i]).descriptor);
  }
  std::vector<std::string> names;
  for (const auto& tag : item.value("RepoTags", json::array())) {
    if (tag.is_string())
      names.push_back(parse_reference(familiar_name(tag.get<std::string>())).str());
  }
  std::string manifest = store.put_image_json("", config_json, layers);
  for (const auto& name : names) store.set_tag(name, manifest);
  if (names.empty()) names.push_back(manifest);
  return names;
}

}  // namespace

std::vector<std::string> load_docker_archive(ImageStore& store, const std::string& dir) {
  json items = parse_bounded_json_or_discarded(read_member(dir, "manifest.json"));
  if (items.is_discarded() || !items.is_array())
    throw Error::invalid("docker archive: manifest.json is not a JSON array");
  std::vector<std::string> names;
  try {
    ImageStore::Lease hold = store.lease();
    for (const json& item : items)
      for (auto& name : load_one(store, dir, item)) names.push_back(std::move(name));
  } catch (const json::exception& e) {
    throw Error::invalid(std::string("docker archive: manifest.json: ") + e.what());
  }
  return names;
}

namespace {

// Each layer as the uncompressed tar docker save carries, named by its diff_id.
Manifest add_docker_layers(ImageStore& store, const ImageRecord& image, ArchiveBundle& bundle,
                           const std::string& scratch) {
  Manifest manifest;
  manifest.config = image.manifest.config;
  manifest.config.media_type = std::string(media_type::kOciConfig);
  for (std::size_t i = 0; i < image.manifest.layers.size(); ++i) {
    const std::string& diff_id = image.config.diff_ids.at(i);
    std::string name = "blobs/sha256/" + digest_hex(diff_id);
    std::string tar = scratch + "/" + digest_hex(diff_id);
    if (!bundle.contains(name)) {
      decompress_layer(store.blob_path(image.manifest.layers[i].digest), tar);
      if (sha256_file_digest(tar) != diff_id)
        throw Error::invalid(image.name + ": layer content does not match its diff_id");
      bundle.add_file(name, tar);
    }
    struct stat st {};
    if (::stat(tar.c_str(), &st) != 0) throw Error(errno, "stat " + tar);
    manifest.layers.push_back({.media_type = std::string(media_type::kOciLayer),
                               .digest = diff_id,
                               .size = st.st_size,
                               .annotations = {}});
  }
  return manifest;
}

}  // namespace

void save_docker_archive(ImageStore& store, const std::vector<ImageRecord>& images,
                         ArchiveBundle& bundle, const std::string& scratch) {
  std::map<std::string, json> by_config;  // one manifest.json item per image, all its tags
  json index_manifests = json::array();
  for (const ImageRecord& image : images) {
    std::string config_name = "blobs/sha256/" + digest_hex(image.manifest.config.digest);
    bundle.add_bytes(config_name, image.config_json);
    Manifest manifest = add_docker_layers(store, image, bundle, scratch);
    std::string manifest_json = manifest_to_json(manifest);
    std::string manifest_digest = sha256_digest(manifest_json);
    bundle.add_bytes("blobs/sha256/" + digest_hex(manifest_digest), manifest_json);
    json& item = by_config[config_name];
    if (item.is_null()) {
      item = {{"Config", config_name}, {"RepoTags", json::array()}, {"Layers", json::array()}};
      for (const auto& layer : manifest.layers)
        item["Layers"].push_back("blobs/sha256/" + digest_hex(layer.digest));
    }
    json entry = {{"mediaType", media_type::kOciManifest},
                  {"digest", manifest_digest},
                  {"size", manifest_json.size()}};
    if (!image.name.empty()) {
      item["RepoTags"].push_back(image.name);
      // As Docker 25 writes them: the tag alone as ref.name, the full name for containerd.
      entry["annotations"] = {{"io.containerd.image.name", qualified_name(image.name)},
                              {std::string(kRefNameAnnotation), parse_reference(image.name).tag}};
    }
    index_manifests.push_back(std::move(entry));
  }
  json manifest_list = json::array();
  for (auto& [_, item] : by_config) manifest_list.push_back(std::move(item));
  bundle.add_bytes("manifest.json", manifest_list.dump());
  bundle.add_bytes("index.json", json{{"schemaVersion", 2},
                                      {"mediaType", media_type::kOciIndex},
                                      {"manifests", index_manifests}}
                                     .dump());
  bundle.add_bytes("oci-layout", R"({"imageLayoutVersion":"1.0.0"})");
}

}  // namespace sandcell::rootfs_builder
