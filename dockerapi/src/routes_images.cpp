// Images from sandcell's store in Docker's shapes: list, inspect, tag, delete, history, prune.
// Save and load are routes_image_archives.cpp.
#include <algorithm>
#include <cctype>
#include <ctime>
#include <map>

#include "api_error.hpp"
#include "api_filters.hpp"
#include "events.hpp"
#include "routes.hpp"
#include "sandcell/rootfs_builder/reference_match.hpp"
#include "sandcell/rootfs_builder/store.hpp"
#include "sandcell/base/bounded_json.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::dockerapi {
namespace {

std::string repository_of(const std::string& name) {
  size_t slash = name.rfind('/');
  size_t colon = name.rfind(':');
  return colon != std::string::npos && (slash == std::string::npos || colon > slash) ? name.substr(0, colon) : name;
}

// An image's creation time in nanoseconds ("2026-12-05T06:38:29.03Z"): `before` and `since`
// compare images built within one second of each other.
int64_t created_ns(const std::string& rfc3339) {
  int64_t ns = unix_time(rfc3339) * 1000000000;
  size_t dot = rfc3339.find('.');
  if (dot == std::string::npos) return ns;
  std::string digits;
  for (size_t i = dot + 1; i < rfc3339.size() && digits.size() < 9 && std::isdigit(static_cast<unsigned char>(rfc3339[i])); ++i)
    digits += rfc3339[i];
  digits.resize(9, '0');
  return ns + std::stoll(digits);
}

// dangling's value: Docker's strconv.ParseBool spellings.
bool dangling_filter(const std::vector<std::string>& values) {
  bool wanted = false;
  for (const std::string& v : values) {
    if (v == "true" || v == "1" || v == "t" || v == "TRUE" || v == "True") wanted = true;
    else if (v != "false" && v != "0" && v != "f" && v != "FALSE" && v != "False")
      throw bad_request("invalid filter 'dangling=" + v + "': expected true or false");
  }
  return wanted;
}

// `before=IMAGE` / `since=IMAGE`: the creation time of the image named (404 when none).
std::optional<int64_t> bound_of(const rootfs_builder::ImageStore& store, const Filters& filters, const char* key) {
  auto it = filters.find(key);
  if (it == filters.end() || it->second.empty()) return std::nullopt;
  if (it->second.size() > 1) throw bad_request(std::string("invalid filter '") + key + "': give one image");
  return created_ns(resolve_image(store, it->second[0]).config.created);
}

// GET /images/json: reference (globs on the familiar name, with and without the tag: only the
// matching tags are listed), dangling (the store keeps no untagged image: true lists none),
// label (the image config's Labels), before and since (another image's creation time).
HttpReply list_images(const ApiContext& api, const HttpRequest& request) {
  Filters filters = parse_filters(request, {"reference", "dangling", "label", "before", "since"});
  rootfs_builder::ImageStore store(api.store_root);
  if (dangling_filter(filters["dangling"])) return json_reply(200, nlohmann::json::array());
  std::optional<int64_t> before = bound_of(store, filters, "before"), since = bound_of(store, filters, "since");
  const std::vector<std::string>& references = filters["reference"];
  std::map<std::string, nlohmann::json> by_id;
  for (const rootfs_builder::ImageSummary& image : store.list()) {
    bool wanted = references.empty();
    for (const std::string& pattern : references) {
      try {
        wanted = wanted || rootfs_builder::reference_matches(pattern, image.name);
      } catch (const Error& e) {
        throw bad_request(std::string("invalid filter 'reference': ") + e.what());
      }
    }
    if (!wanted) continue;
    nlohmann::json& entry = by_id[image.config_digest];
    if (entry.is_null())
      entry = {{"Id", image.config_digest}, {"ParentId", ""}, {"RepoTags", nlohmann::json::array()},
               {"RepoDigests", nlohmann::json::array()}, {"Created", unix_time(image.created)},
               {"Size", image.size}, {"VirtualSize", image.size}, {"SharedSize", -1},
               {"Labels", nlohmann::json::object()}, {"Containers", -1}, {"ResolveFrom", image.name}};
    entry["RepoTags"].push_back(image.name);
    entry["RepoDigests"].push_back(repository_of(image.name) + "@" + image.manifest_digest);
  }
  nlohmann::json out = nlohmann::json::array();
  for (auto& [id, entry] : by_id) {
    std::string name = entry["ResolveFrom"];
    entry.erase("ResolveFrom");
    rootfs_builder::ImageRecord record;
    try {
      record = store.resolve(name);
    } catch (const Error&) {  // untagged meanwhile
      continue;
    }
    int64_t created = created_ns(record.config.created);
    if ((before && created >= *before) || (since && created <= *since)) continue;
    const std::map<std::string, std::string>& labels = record.config.config.labels;
    if (!labels_match(filters["label"], labels)) continue;
    entry["Labels"] = labels;
    out.push_back(entry);
  }
  return json_reply(200, out);
}

// The tags of one image (its config digest, Docker's image ID).
std::vector<std::string> tags_of(const rootfs_builder::ImageStore& store, const std::string& image_id) {
  std::vector<std::string> tags;
  for (const rootfs_builder::ImageSummary& image : store.list())
    if (image.config_digest == image_id) tags.push_back(image.name);
  return tags;
}

HttpReply inspect_image(const ApiContext& api, const std::string& name) {
  rootfs_builder::ImageStore store(api.store_root);
  rootfs_builder::ImageRecord record = resolve_image(store, name);
  const rootfs_builder::ContainerConfig& c = record.config.config;
  int64_t size = record.manifest.config.size;
  for (const auto& layer : record.manifest.layers) size += layer.size;
  nlohmann::json config = {{"User", c.user}, {"Env", c.env}, {"WorkingDir", c.working_dir}, {"Labels", c.labels},
                           {"Entrypoint", c.entrypoint ? nlohmann::json(*c.entrypoint) : nlohmann::json()},
                           {"Cmd", c.cmd ? nlohmann::json(*c.cmd) : nlohmann::json()}};
  // Every tag of the image, as Docker's inspect (by ID or by any of its tags) lists them.
  nlohmann::json tags = tags_of(store, record.manifest.config.digest);
  if (tags.empty() && !record.name.empty()) tags.push_back(record.name);
  return json_reply(200, {{"Id", record.manifest.config.digest}, {"RepoTags", tags},
                          {"RepoDigests", {repository_of(record.name.empty() ? name : record.name) + "@" + record.manifest_digest}},
                          {"Created", record.config.created.empty() ? "0001-01-01T00:00:00Z" : record.config.created}, {"Size", size}, {"VirtualSize", size},
                          {"Architecture", record.config.architecture}, {"Os", record.config.os},
                          {"Author", record.config.author}, {"Config", config},
                          {"RootFS", {{"Type", "layers"}, {"Layers", record.config.diff_ids}}},
                          {"Metadata", {{"LastTagTime", "0001-01-01T00:00:00Z"}}}});
}

// The store's own test for an ID (sha256:..., or 12 to 64 hex digits): such a name is never a tag.
bool names_an_id(const std::string& name) {
  bool hex = name.size() >= 12 && name.size() <= 64 && name.find_first_not_of("0123456789abcdef") == std::string::npos;
  return hex || name.starts_with("sha256:");
}

struct ImageUsers {
  std::vector<std::string> running, stopped;  // container ids
};

// The containers pinned to an image: they run on its layers, and start from them (create.json).
ImageUsers containers_using(const ApiContext& api, const std::string& image_id) {
  ImageUsers users;
  for (const ContainerDir& container : api.containers.list()) {
    try {
      if (container.create_request().value("ImageID", "") != image_id) continue;
      (container.state().status == "running" ? users.running : users.stopped).push_back(container.id());
    } catch (const Error&) {  // removed meanwhile
    } catch (const nlohmann::json::exception&) {
    }
  }
  return users;
}

HttpReply tag_image(const ApiContext& api, const std::string& source, const HttpRequest& request) {
  std::string repo = request.param("repo").value_or("");
  if (repo.empty()) throw bad_request("repository name (repo) is required");
  std::string tag = request.param("tag").value_or("");
  rootfs_builder::ImageStore store(api.store_root);
  rootfs_builder::ImageRecord record = resolve_image(store, source);
  std::string target = rootfs_builder::parse_reference(repo + ":" + (tag.empty() ? "latest" : tag)).str();
  store.set_tag(target, record.manifest_digest);
  record_event(api.store_root, image_event("tag", record.manifest.config.digest, target));
  HttpReply reply;
  reply.status = 201;
  reply.body = "";
  return reply;
}

// Docker's conflicts (daemon/images/image_delete.go): a running container is a hard one, force
// or not; a stopped container or more than one tag (deleting by ID) need force. Unlike Docker,
// a forced delete does not keep the image for the stopped container: it can no longer start
// (docs/docker-api.md, "Known differences").
void check_delete_conflicts(const ApiContext& api, const std::string& name, const std::string& image_id,
                            const std::vector<std::string>& doomed_tags, bool last_tag, bool force) {
  std::string short_id = image_id.substr(7, 12);
  if (doomed_tags.size() > 1 && !force)
    throw conflict("conflict: unable to delete " + short_id +
                   " (must be forced) - image is referenced in multiple repositories");
  if (!last_tag) return;
  ImageUsers users = containers_using(api, image_id);
  if (!users.running.empty())
    throw conflict("conflict: unable to delete " + name + " (cannot be forced) - image is being used by running container " +
                   users.running[0].substr(0, 12));
  if (!users.stopped.empty() && !force)
    throw conflict("conflict: unable to remove repository reference \"" + name + "\" (must force) - container " +
                   users.stopped[0].substr(0, 12) + " is using its referenced image " + short_id);
}

HttpReply delete_image(const ApiContext& api, const std::string& name, bool force) {
  rootfs_builder::ImageStore store(api.store_root);
  rootfs_builder::ImageRecord record = resolve_image(store, name);
  const std::string image_id = record.manifest.config.digest;
  std::vector<std::string> tags = tags_of(store, image_id);
  // By tag: that tag alone (the image stays while another names it); by ID: every tag.
  std::vector<std::string> doomed = tags;
  if (!names_an_id(name)) doomed = {rootfs_builder::parse_reference(name).str()};
  bool last_tag = doomed.size() == tags.size();
  check_delete_conflicts(api, name, image_id, doomed, last_tag, force);
  nlohmann::json out = nlohmann::json::array();
  for (const std::string& tag : doomed) {
    store.remove(tag);
    out.push_back({{"Untagged", tag}});
    record_event(api.store_root, image_event("untag", image_id, tag));
  }
  if (last_tag) {
    out.push_back({{"Deleted", image_id}});
    record_event(api.store_root, image_event("delete", image_id, name));
    // Its blobs and unpacked layers go now unless a run, build or pull holds the store (prune
    // would wait for them): then with the next prune.
    store.prune_if_idle();
  }
  return json_reply(200, out);
}

HttpReply image_history(const ApiContext& api, const std::string& name) {
  rootfs_builder::ImageStore store(api.store_root);
  rootfs_builder::ImageRecord record = resolve_image(store, name);
  const auto& layers = record.manifest.layers;
  nlohmann::json out = nlohmann::json::array();
  size_t layer = 0;
  for (const rootfs_builder::HistoryEntry& step : record.config.history) {
    int64_t size = !step.empty_layer && layer < layers.size() ? layers[layer++].size : 0;
    out.push_back({{"Id", "<missing>"}, {"Created", unix_time(step.created)}, {"CreatedBy", step.created_by},
                   {"Tags", nullptr}, {"Size", size}, {"Comment", step.comment}});
  }
  if (out.empty())  // an image without history: its layers, as Docker shows them
    for (const auto& l : layers)
      out.push_back({{"Id", "<missing>"}, {"Created", unix_time(record.config.created)}, {"CreatedBy", ""},
                     {"Tags", nullptr}, {"Size", l.size}, {"Comment", ""}});
  std::reverse(out.begin(), out.end());  // newest first
  if (!out.empty()) {
    out[0]["Id"] = record.manifest.config.digest;
    out[0]["Tags"] = tags_of(store, record.manifest.config.digest);
  }
  return json_reply(200, out);
}

// A filter's values in either of Docker's shapes: {"k":{"v":true}} or {"k":["v"]}.
std::vector<std::string> filter_values(const nlohmann::json& filters, const std::string& key) {
  std::vector<std::string> out;
  auto it = filters.find(key);
  if (it == filters.end()) return out;
  if (it->is_object())
    for (auto& [value, on] : it->items()) out.push_back(value);
  else if (it->is_array())
    for (const auto& value : *it)
      if (value.is_string()) out.push_back(value.get<std::string>());
  return out;
}

// `docker image prune`: the store keeps no untagged images, so there are no dangling ones to
// untag; `-a` (dangling=false) untags every image no container is pinned to. Then the blobs
// and layers no tag holds go, unless a run, build or pull holds the store (they would wait).
HttpReply prune_images(const ApiContext& api, const HttpRequest& request) {
  nlohmann::json filters = parse_bounded_json_or_discarded(request.param("filters").value_or("{}"));
  if (!filters.is_object()) throw bad_request("filters must be a JSON object");
  for (auto& [key, value] : filters.items())
    if (key != "dangling") throw bad_request("image prune filter " + key + " is not supported by sandcell (dangling)");
  std::vector<std::string> dangling = filter_values(filters, "dangling");
  bool all = !dangling.empty() && (dangling[0] == "false" || dangling[0] == "0");
  rootfs_builder::ImageStore store(api.store_root);
  nlohmann::json deleted = nlohmann::json::array();
  if (all) {
    std::map<std::string, std::vector<std::string>> by_id;
    for (const rootfs_builder::ImageSummary& image : store.list()) by_id[image.config_digest].push_back(image.name);
    for (const auto& [id, tags] : by_id) {
      ImageUsers users = containers_using(api, id);
      if (!users.running.empty() || !users.stopped.empty()) continue;
      for (const std::string& tag : tags) store.remove(tag), deleted.push_back({{"Untagged", tag}});
      deleted.push_back({{"Deleted", id}});
    }
  }
  std::optional<rootfs_builder::PruneStats> stats = store.prune_if_idle();
  return json_reply(200, {{"ImagesDeleted", deleted.empty() ? nlohmann::json() : deleted},
                          {"SpaceReclaimed", stats ? stats->bytes_freed : 0}});
}

}  // namespace

rootfs_builder::ImageRecord resolve_image(const rootfs_builder::ImageStore& store, const std::string& name) {
  try {
    return store.resolve(name);
  } catch (const Error&) {
    throw not_found("No such image: " + name);
  }
}

std::string image_name(const Segments& path, size_t trailing) {
  std::string name = path.at(1);
  for (size_t i = 2; i + trailing < path.size(); ++i) name += "/" + path[i];
  return name;
}

std::optional<HttpReply> image_route(const ApiContext& api, const HttpRequest& request, const Segments& path) {
  if (path.empty() || path[0] != "images") return std::nullopt;
  const std::string& method = request.method;
  if (path.size() == 2 && path[1] == "json" && method == "GET") return list_images(api, request);
  if (path.size() == 2 && path[1] == "prune" && method == "POST") return prune_images(api, request);
  if (path.size() >= 2 && method == "DELETE") return delete_image(api, image_name(path, 0), request.flag("force"));
  if (path.size() < 3) return std::nullopt;
  const std::string& action = path.back();
  if (action == "json" && method == "GET") return inspect_image(api, image_name(path, 1));
  if (action == "tag" && method == "POST") return tag_image(api, image_name(path, 1), request);
  if (action == "history" && method == "GET") return image_history(api, image_name(path, 1));
  return std::nullopt;
}

}  // namespace sandcell::dockerapi
