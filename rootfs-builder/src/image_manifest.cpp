// OCI image manifests (image-spec manifest.md) and Docker v2 schema 2 manifests, which have
// the same shape with other media types.
#include <nlohmann/json.hpp>

#include "sandcell/rootfs_builder/digest.hpp"
#include "sandcell/rootfs_builder/image.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/bounded_json.hpp"

namespace sandcell::rootfs_builder {
namespace {

using nlohmann::json;

json descriptor_to_json(const Descriptor& d) {
  json j = {{"mediaType", d.media_type}, {"digest", d.digest}, {"size", d.size}};
  if (!d.annotations.empty()) j["annotations"] = d.annotations;
  return j;
}

Descriptor descriptor_from_json(const json& j) {
  Descriptor d;
  d.media_type = j.value("mediaType", "");
  d.digest = j.at("digest").get<std::string>();
  // get<int64_t> of a float converts it, and 1e300 is undefined behaviour: integers only.
  if (!j.at("size").is_number_integer()) throw Error::invalid("manifest: a size is not an integer");
  d.size = j.at("size").get<std::int64_t>();
  if (auto it = j.find("annotations"); it != j.end() && it->is_object()) it->get_to(d.annotations);
  if (!is_valid_digest(d.digest)) throw Error::invalid("manifest: unsupported digest " + d.digest);
  if (d.size < 0) throw Error::invalid("manifest: negative size for " + d.digest);
  return d;
}

}  // namespace

std::string manifest_to_json(const Manifest& m) {
  json j = {
      {"schemaVersion", 2}, {"mediaType", m.media_type}, {"config", descriptor_to_json(m.config)}};
  json layers = json::array();
  for (const auto& l : m.layers) layers.push_back(descriptor_to_json(l));
  j["layers"] = std::move(layers);
  if (!m.annotations.empty()) j["annotations"] = m.annotations;
  return j.dump();
}

Manifest manifest_from_json(std::string_view text) {
  try {
    json j = parse_bounded_json_or_discarded(text);
    if (j.is_discarded() || !j.is_object()) throw Error::invalid("manifest: not a JSON object");
    // Compared as JSON: value("schemaVersion", 0) converted 2e34 to int (undefined behaviour).
    if (j.value("schemaVersion", json()) != 2) throw Error::invalid("manifest: schemaVersion is not 2");
    Manifest m;
    // mediaType is optional in OCI manifests; Docker's is mandatory.
    m.media_type = j.value("mediaType", std::string(media_type::kOciManifest));
    if (m.media_type != media_type::kOciManifest && m.media_type != media_type::kDockerManifest)
      throw Error::invalid("manifest: unsupported media type " + m.media_type);
    m.config = descriptor_from_json(j.at("config"));
    for (const auto& l : j.at("layers")) m.layers.push_back(descriptor_from_json(l));
    if (auto it = j.find("annotations"); it != j.end() && it->is_object())
      it->get_to(m.annotations);
    return m;
  } catch (const nlohmann::json::exception& e) {
    throw Error::invalid(std::string("manifest: ") + e.what());
  }
}

}  // namespace sandcell::rootfs_builder
