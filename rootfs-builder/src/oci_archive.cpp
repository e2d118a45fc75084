// OCI archives: a tar of an OCI image layout (image-spec image-layout.md). Reading follows
// index.json (and one level of nested image indexes, picking this machine's platform); writing
// copies the stored blobs as they are, so manifests and digests survive a save/load trip.
#include <nlohmann/json.hpp>

#include "archive_bundle.hpp"
#include "sandcell/rootfs_builder/digest.hpp"
#include "sandcell/rootfs_builder/layer_tar.hpp"
#include "sandcell/base/bounded_json.hpp"

namespace sandcell::rootfs_builder {
namespace {

using nlohmann::json;

std::string blob_member(const std::string& digest) {
  return "blobs/sha256/" + digest_hex(digest);  // validates: no path games through digests
}

// Reads a blob of the layout and checks it against its digest.
std::string read_verified(const std::string& dir, const std::string& digest) {
  std::string data = read_member(dir, blob_member(digest));
  if (sha256_digest(data) != digest)
    throw Error::invalid("oci archive: blob " + digest + " does not match its digest");
  return data;
}

// An image index entry: the manifest for linux/<this arch>, else the first one.
std::string pick_from_index(const std::string& dir, const std::string& digest) {
  json index = parse_bounded_json_or_discarded(read_verified(dir, digest));
  if (index.is_discarded() || !index.contains("manifests") || index["manifests"].empty())
    throw Error::invalid("oci archive: empty image index " + digest);
  for (const json& m : index["manifests"]) {
    json platform = m.value("platform", json::object());
    if (platform.value("os", "") == "linux" &&
        platform.value("architecture", "") == host_architecture())
      return m.at("digest").get<std::string>();
  }
  return index["manifests"][0].at("digest").get<std::string>();
}

std::string image_name(const json& descriptor) {
  json annotations = descriptor.value("annotations", json::object());
  if (auto it = annotations.find("io.containerd.image.name"); it != annotations.end())
    return parse_reference(familiar_name(it->get<std::string>())).str();
  if (auto it = annotations.find(std::string(kRefNameAnnotation)); it != annotations.end())
    return parse_reference(it->get<std::string>()).str();
  return {};
}

// Stores one image; keeps the manifest byte for byte when every layer was already gzip.
std::string load_manifest(ImageStore& store, const std::string& dir, const std::string& digest) {
  std::string manifest_json = read_verified(dir, digest);
  Manifest manifest = manifest_from_json(manifest_json);
  std::string config_json = read_verified(dir, manifest.config.digest);
  ImageConfig config = config_from_json(config_json);
  if (config.diff_ids.size() != manifest.layers.size())
    throw Error::invalid("oci archive: config diff_ids and manifest layers differ in number");
  bool unchanged = true;
  std::vector<Descriptor> layers;
  for (std::size_t i = 0; i < manifest.layers.size(); ++i) {
    const Descriptor& layer = manifest.layers[i];
    ArchiveMember member = open_member(dir, blob_member(layer.digest));
    if (sha256_file_digest(member.path()) != layer.digest)
      throw Error::invalid("oci archive: layer " + layer.digest + " does not match its digest");
    StoredLayer stored = store_layer(store, member.path(), config.diff_ids[i]);
    unchanged = unchanged && stored.descriptor.digest == layer.digest;
    layers.push_back(unchanged ? layer : stored.descriptor);
  }
  if (!unchanged) return store.put_image_json("", config_json, layers);
  store.put_blob(config_json, manifest.config.digest);
  return store.put_blob(manifest_json, digest);
}

}  // namespace

std::vector<std::string> load_oci_layout(ImageStore& store, const std::string& dir) {
  json index = parse_bounded_json_or_discarded(read_member(dir, "index.json"));
  if (index.is_discarded() || !index.is_object())
    throw Error::invalid("oci archive: index.json is not a JSON object");
  std::vector<std::string> names;
  try {
    ImageStore::Lease hold = store.lease();
    for (const json& d : index.value("manifests", json::array())) {
      std::string digest = d.at("digest").get<std::string>();
      std::string type = d.value("mediaType", "");
      if (type == media_type::kOciIndex || type == media_type::kDockerManifestList)
        digest = pick_from_index(dir, digest);
      std::string manifest_digest = load_manifest(store, dir, digest);
      std::string name = image_name(d);
      if (!name.empty()) store.set_tag(name, manifest_digest);
      names.push_back(name.empty() ? manifest_digest : name);
    }
  } catch (const json::exception& e) {
    throw Error::invalid(std::string("oci archive: ") + e.what());
  }
  return names;
}

void save_oci_archive(ImageStore& store, const std::vector<ImageRecord>& images,
                      ArchiveBundle& bundle) {
  json manifests = json::array();
  for (const ImageRecord& image : images) {
    bundle.add_file(blob_member(image.manifest_digest), store.blob_path(image.manifest_digest));
    bundle.add_file(blob_member(image.manifest.config.digest),
                    store.blob_path(image.manifest.config.digest));
    for (const Descriptor& layer : image.manifest.layers)
      bundle.add_file(blob_member(layer.digest), store.blob_path(layer.digest));
    json entry = {{"mediaType", image.manifest.media_type},
                  {"digest", image.manifest_digest},
                  {"size", image.manifest_json.size()}};
    // The full name as ref.name, which `skopeo ... oci-archive:F:name:tag` and podman match;
    // containerd's annotation for `ctr import`.
    if (!image.name.empty())
      entry["annotations"] = {{std::string(kRefNameAnnotation), image.name},
                              {"io.containerd.image.name", qualified_name(image.name)}};
    manifests.push_back(std::move(entry));
  }
  bundle.add_bytes(
      "index.json",
      json{{"schemaVersion", 2}, {"mediaType", media_type::kOciIndex}, {"manifests", manifests}}
          .dump());
  bundle.add_bytes("oci-layout", R"({"imageLayoutVersion":"1.0.0"})");
}

}  // namespace sandcell::rootfs_builder
