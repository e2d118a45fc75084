// Images from sandcell's store in Docker's shapes: list and inspect.
#include <ctime>
#include <map>

#include "api_error.hpp"
#include "routes.hpp"
#include "sandcell/rootfs_builder/store.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::dockerapi {
namespace {

std::string repository_of(const std::string& name) {
  size_t slash = name.rfind('/');
  size_t colon = name.rfind(':');
  return colon != std::string::npos && (slash == std::string::npos || colon > slash) ? name.substr(0, colon) : name;
}

HttpReply list_images(const ApiContext& api) {
  rootfs_builder::ImageStore store(api.store_root);
  std::map<std::string, nlohmann::json> by_id;
  for (const rootfs_builder::ImageSummary& image : store.list()) {
    nlohmann::json& entry = by_id[image.config_digest];
    if (entry.is_null())
      entry = {{"Id", image.config_digest}, {"ParentId", ""}, {"RepoTags", nlohmann::json::array()},
               {"RepoDigests", nlohmann::json::array()}, {"Created", unix_time(image.created)},
               {"Size", image.size}, {"VirtualSize", image.size}, {"SharedSize", -1},
               {"Labels", nlohmann::json::object()}, {"Containers", -1}};
    entry["RepoTags"].push_back(image.name);
    entry["RepoDigests"].push_back(repository_of(image.name) + "@" + image.manifest_digest);
  }
  nlohmann::json out = nlohmann::json::array();
  for (auto& [id, entry] : by_id) out.push_back(entry);
  return json_reply(200, out);
}

HttpReply inspect_image(const ApiContext& api, const std::string& name) {
  rootfs_builder::ImageStore store(api.store_root);
  rootfs_builder::ImageRecord record;
  try {
    record = store.resolve(name);
  } catch (const Error&) {
    throw not_found("No such image: " + name);
  }
  const rootfs_builder::ContainerConfig& c = record.config.config;
  int64_t size = record.manifest.config.size;
  for (const auto& layer : record.manifest.layers) size += layer.size;
  nlohmann::json config = {{"User", c.user}, {"Env", c.env}, {"WorkingDir", c.working_dir}, {"Labels", c.labels},
                           {"Entrypoint", c.entrypoint ? nlohmann::json(*c.entrypoint) : nlohmann::json()},
                           {"Cmd", c.cmd ? nlohmann::json(*c.cmd) : nlohmann::json()}};
  nlohmann::json tags = nlohmann::json::array();
  if (!record.name.empty()) tags.push_back(record.name);
  return json_reply(200, {{"Id", record.manifest.config.digest}, {"RepoTags", tags},
                          {"RepoDigests", {repository_of(record.name.empty() ? name : record.name) + "@" + record.manifest_digest}},
                          {"Created", record.config.created}, {"Size", size}, {"VirtualSize", size},
                          {"Architecture", record.config.architecture}, {"Os", record.config.os},
                          {"Author", record.config.author}, {"Config", config},
                          {"RootFS", {{"Type", "layers"}, {"Layers", record.config.diff_ids}}},
                          {"Metadata", {{"LastTagTime", ""}}}});
}

}  // namespace

std::optional<HttpReply> image_route(const ApiContext& api, const HttpRequest& request, const Segments& path) {
  if (path.empty() || path[0] != "images") return std::nullopt;
  if (path.size() == 2 && path[1] == "json" && request.method == "GET") return list_images(api);
  if (path.size() >= 3 && path.back() == "json" && request.method == "GET") {
    std::string name = path[1];
    for (size_t i = 2; i + 1 < path.size(); ++i) name += "/" + path[i];
    return inspect_image(api, name);
  }
  return std::nullopt;
}

}  // namespace sandcell::dockerapi
