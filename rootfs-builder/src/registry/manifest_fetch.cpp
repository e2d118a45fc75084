// Manifests by the distribution spec: the client hashes what it received, never a
// re-serialisation, and a digest reference must match those bytes exactly.
#include "manifest_fetch.hpp"

#include <nlohmann/json.hpp>

#include "sandcell/rootfs_builder/digest.hpp"
#include "sandcell/base/bounded_json.hpp"

namespace sandcell::rootfs_builder {
namespace {

using nlohmann::json;

const std::string kAccept = "Accept: " + std::string(media_type::kOciIndex) + ", " +
                            std::string(media_type::kDockerManifestList) + ", " +
                            std::string(media_type::kOciManifest) + ", " +
                            std::string(media_type::kDockerManifest);

// mediaType in the body wins (it is what the digest covers); else Content-Type; else the
// shape: an OCI index may omit mediaType and have "manifests".
std::string media_type_of(const json& body, const HttpResponse& response) {
  if (body.contains("mediaType") && body["mediaType"].is_string()) return body["mediaType"];
  std::string content_type = response.header("content-type");
  content_type = content_type.substr(0, content_type.find(';'));
  if (content_type != "application/json" && !content_type.empty()) return content_type;
  return std::string(body.contains("manifests") ? media_type::kOciIndex : media_type::kOciManifest);
}

// A string member, or "" when missing or of another type: json::value("key", "") would throw
// type_error on a registry's {"os": 1}, which nothing above here catches.
std::string text_of(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

bool matches(const json& platform, const Platform& wanted) {
  if (!platform.is_object()) return false;
  if (text_of(platform, "os") != wanted.os || text_of(platform, "architecture") != wanted.architecture)
    return false;
  return wanted.variant.empty() || text_of(platform, "variant") == wanted.variant;
}

}  // namespace

bool FetchedManifest::is_index() const {
  return media_type == media_type::kOciIndex || media_type == media_type::kDockerManifestList;
}

FetchedManifest fetch_manifest(RegistrySession& session, HttpClient& client, const std::string& repository,
                               const std::string& reference) {
  std::string what = "manifest " + session.registry() + "/" + repository + (is_valid_digest(reference) ? "@" : ":") + reference;
  HttpResponse response = session.send(client, {.url = session.url("/v2/" + repository + "/manifests/" + reference),
                                                .headers = {kAccept}});
  if (response.status == 404) throw Error::not_found(what + ": not found");
  if (response.status != 200) throw_registry_error(what, response);
  FetchedManifest m{.bytes = std::move(response.body), .media_type = {}, .digest = {}};
  m.digest = sha256_digest(m.bytes);
  std::string expected = is_valid_digest(reference) ? reference : response.header("docker-content-digest");
  if (!expected.empty() && expected != m.digest)
    throw Error::invalid(what + ": digest mismatch: expected " + expected + ", received bytes hash to " + m.digest);
  json body = parse_bounded_json_or_discarded(m.bytes);
  if (!body.is_object()) throw Error::invalid(what + ": not a JSON object");
  m.media_type = media_type_of(body, response);
  if (!m.is_index() && m.media_type != media_type::kOciManifest && m.media_type != media_type::kDockerManifest)
    throw Error::invalid(what + ": unsupported media type " + m.media_type +
                         " (schema 1 and other formats are not supported)");
  return m;
}

Platform parse_platform(const std::string& text) {
  if (text.empty()) return {.os = "linux", .architecture = host_architecture(), .variant = {}};
  Platform p;
  auto first = text.find('/');
  if (first == std::string::npos) throw Error::invalid("--platform must be os/arch[/variant], got '" + text + "'");
  p.os = text.substr(0, first);
  auto second = text.find('/', first + 1);
  p.architecture = text.substr(first + 1, second == std::string::npos ? std::string::npos : second - first - 1);
  if (second != std::string::npos) p.variant = text.substr(second + 1);
  if (p.os.empty() || p.architecture.empty())
    throw Error::invalid("--platform must be os/arch[/variant], got '" + text + "'");
  return p;
}

Descriptor select_platform(const FetchedManifest& index, const Platform& platform) {
  json body = parse_bounded_json_or_discarded(index.bytes);
  if (!body.contains("manifests") || !body["manifests"].is_array())
    throw Error::invalid("index " + index.digest + " has no manifests list");
  std::string available;
  for (const auto& entry : body["manifests"]) {
    if (!entry.is_object()) continue;
    const json p = entry.value("platform", json());
    if (matches(p, platform)) {
      // Only an integer size: get<int64_t> of 1e300 would be an undefined float conversion.
      const json size = entry.value("size", json(0));
      if (!size.is_number_integer()) throw Error::invalid("index " + index.digest + ": a manifest size is not an integer");
      return {.media_type = text_of(entry, "mediaType"), .digest = text_of(entry, "digest"),
              .size = size.get<std::int64_t>(), .annotations = {}};
    }
    if (p.is_object())
      available += " " + text_of(p, "os") + "/" + text_of(p, "architecture") +
                   (text_of(p, "variant").empty() ? "" : "/" + text_of(p, "variant"));
  }
  throw Error::invalid("no image for platform " + platform.str() + " in index " + index.digest +
                       " (it has:" + (available.empty() ? " none" : available) + ")");
}

}  // namespace sandcell::rootfs_builder
