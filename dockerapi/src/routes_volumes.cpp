// /volumes: create, list, inspect, remove, prune (volume_store.hpp). A volume a container names
// is not removed (409), as Docker refuses. Each volume is bounded (docs/docker-api.md, "Volumes"):
// DriverOpts size, else the server's --disk, at most --max-disk.
#include <algorithm>

#include "api_error.hpp"
#include "container_mounts.hpp"
#include "routes.hpp"
#include "sandcell/base/bounded_json.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::dockerapi {
namespace {

using nlohmann::json;

json parsed_filters(const HttpRequest& request, std::initializer_list<const char*> known) {
  json filters = parse_bounded_json_or_discarded(request.param("filters").value_or("{}"));
  if (filters.is_discarded() || !filters.is_object()) throw bad_request("filters must be a JSON object");
  for (const auto& item : filters.items()) {
    const std::string& key = item.key();  // (clang 14 lambdas cannot capture structured bindings)
    if (std::find_if(known.begin(), known.end(), [&](const char* k) { return key == k; }) == known.end())
      throw bad_request("volume filter " + key + " is not supported by sandcell");
  }
  return filters;
}

// {"k":{"v":true}} or {"k":["v"]}: the first value.
std::string filter_value(const json& filters, const char* key) {
  auto it = filters.find(key);
  if (it == filters.end()) return "";
  if (it->is_object() && !it->empty()) return it->begin().key();
  if (it->is_array() && !it->empty() && (*it)[0].is_string()) return (*it)[0];
  return "";
}

// DriverOpts (`docker volume create --opt size=512m`): only size. The local driver's type, device
// and o mount a host device or path (or a tmpfs) as the volume: refused.
uint64_t volume_size(const json& options, const DiskBounds& disk) {
  if (options.is_null()) return disk.default_bytes;
  if (!options.is_object()) throw bad_request("DriverOpts must be an object");
  uint64_t bytes = disk.default_bytes;
  for (const auto& [key, value] : options.items()) {
    if (key == "type" || key == "device" || key == "o")
      throw bad_request("DriverOpts " + key + " is refused by sandcell: it mounts host devices and paths into the volume");
    if (key != "size") throw bad_request("DriverOpts " + key + " is not supported by sandcell (only size)");
    bytes = checked_disk_size("DriverOpts size", value, disk);
  }
  return bytes;
}

HttpReply create_volume(const ApiContext& api, const HttpRequest& request) {
  json body = request.body.empty() ? json::object() : parse_bounded_json_or_discarded(request.body);
  if (!body.is_object()) throw bad_request("the request body must be a JSON object");
  std::string driver = body.value("Driver", "");
  if (!driver.empty() && driver != "local") throw bad_request("volume driver " + driver + " is not supported by sandcell (local)");
  uint64_t bytes = volume_size(body.value("DriverOpts", json()), api.disk);
  if (!body.value("Name", json("")).is_string()) throw bad_request("Name must be a string");
  Volume volume = api.volumes.create(body.value("Name", ""), bytes, body.value("Labels", json::object()));
  return json_reply(201, VolumeStore::to_json(volume));
}

HttpReply list_volumes(const ApiContext& api, const HttpRequest& request) {
  json filters = parsed_filters(request, {"name", "dangling"});
  std::string name = filter_value(filters, "name"), dangling = filter_value(filters, "dangling");
  json out = json::array();
  for (const Volume& volume : api.volumes.list()) {
    if (!name.empty() && volume.name.find(name) == std::string::npos) continue;
    bool used = !volume_users(api.containers, volume.name).empty();
    if ((dangling == "true" || dangling == "1") && used) continue;
    if ((dangling == "false" || dangling == "0") && !used) continue;
    out.push_back(VolumeStore::to_json(volume));
  }
  return json_reply(200, {{"Volumes", out}, {"Warnings", json::array()}});
}

HttpReply remove_volume(const ApiContext& api, const std::string& name) {
  Volume volume = api.volumes.get(name);
  std::vector<std::string> users = volume_users(api.containers, volume.name);
  if (!users.empty())
    throw conflict("remove " + name + ": volume is in use - [" + users[0] + "]");
  api.volumes.remove(volume.name);
  HttpReply reply;
  reply.status = 204;
  reply.content_type.clear();
  return reply;
}

// Docker since API 1.42: anonymous volumes no container uses; `all=true` every unused one.
HttpReply prune_volumes(const ApiContext& api, const HttpRequest& request) {
  json filters = parsed_filters(request, {"all"});
  bool all = filter_value(filters, "all") == "true" || filter_value(filters, "all") == "1";
  json deleted = json::array();
  uint64_t bytes = 0;
  for (const Volume& volume : api.volumes.list()) {
    if ((!volume.anonymous && !all) || !volume_users(api.containers, volume.name).empty()) continue;
    try {
      bytes += api.volumes.remove(volume.name);
    } catch (const ApiError&) {  // a container started with it meanwhile
      continue;
    }
    deleted.push_back(volume.name);
  }
  return json_reply(200, {{"VolumesDeleted", deleted}, {"SpaceReclaimed", bytes}});
}

}  // namespace

std::optional<HttpReply> volume_route(const ApiContext& api, const HttpRequest& request, const Segments& path) {
  if (path.empty() || path[0] != "volumes") return std::nullopt;
  const std::string& method = request.method;
  if (path.size() == 1 && method == "GET") return list_volumes(api, request);
  if (path.size() == 2 && path[1] == "create" && method == "POST") return create_volume(api, request);
  if (path.size() == 2 && path[1] == "prune" && method == "POST") return prune_volumes(api, request);
  if (path.size() == 2 && method == "GET") {
    Volume volume = api.volumes.get(path[1]);
    return json_reply(200, VolumeStore::to_json(volume, static_cast<int64_t>(volume_users(api.containers, volume.name).size())));
  }
  if (path.size() == 2 && method == "DELETE") return remove_volume(api, path[1]);
  return std::nullopt;
}

}  // namespace sandcell::dockerapi
