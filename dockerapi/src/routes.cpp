// Dispatch: /vX.Y/ stripped, then the first segment picks the group; Docker's error shape.
#include "routes.hpp"

#include <ctime>
#include <regex>

#include "api_error.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/rootfs_builder/store.hpp"

namespace sandcell::dockerapi {
namespace {

Segments split_path(const std::string& path) {
  Segments out;
  size_t start = 1;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    if (end > start) out.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

HttpReply error_reply(int status, const std::string& message) { return json_reply(status, {{"message", message}}); }

// The path's segments without a leading "vX.Y"; nullopt for a version we do not serve.
std::optional<Segments> unversioned(const std::string& request_path) {
  static const std::regex kVersion("v([0-9]+)\\.([0-9]+)");
  Segments path = split_path(request_path);
  std::smatch version;
  if (!path.empty() && std::regex_match(path[0], version, kVersion)) {
    int major = std::stoi(version[1]), minor = std::stoi(version[2]);
    if (major != 1 || minor < 24) return std::nullopt;
    path.erase(path.begin());
  }
  return path;
}

}  // namespace

int64_t unix_time(const std::string& rfc3339) {
  std::tm tm{};
  if (strptime(rfc3339.c_str(), "%Y-%m-%dT%H:%M:%S", &tm) == nullptr) return 0;
  return static_cast<int64_t>(timegm(&tm));
}

HttpReply json_reply(int status, const nlohmann::json& body) {
  HttpReply reply;
  reply.status = status;
  reply.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  return reply;
}

std::optional<BodySpool> body_spool(const ApiContext& api, const HttpRequest& request) {
  std::optional<Segments> path = unversioned(request.path);
  if (!path || request.method != "POST" || (*path != Segments{"images", "load"} && *path != Segments{"build"}))
    return std::nullopt;
  return BodySpool{.dir = rootfs_builder::ImageStore(api.store_root).tmp_dir(), .max_bytes = api.max_load_bytes};
}

HttpReply route(const ApiContext& api, const HttpRequest& request) {
  std::optional<Segments> versioned = unversioned(request.path);
  if (!versioned)
    return error_reply(400, "client version " + split_path(request.path)[0].substr(1) +
                                " is too old. Minimum supported API version is " + kMinApiVersion +
                                ", please upgrade your client to a newer version");
  const Segments& path = *versioned;
  HttpReply reply;
  try {
    std::optional<HttpReply> answered = system_route(api, request, path);
    if (!answered) answered = image_archive_route(api, request, path);
    if (!answered) answered = image_route(api, request, path);
    if (!answered) answered = image_transfer_route(api, request, path);
    if (!answered) answered = exec_route(api, request, path);
    if (!answered) answered = archive_route(api, request, path);
    if (!answered) answered = volume_route(api, request, path);
    if (!answered) answered = container_state_route(api, request, path);
    if (!answered) answered = events_route(api, request, path);
    if (!answered) answered = network_route(api, request, path);
    if (!answered) answered = container_route(api, request, path);
    // `docker inspect NAME` asks for a container first: a name with slashes (an image
    // reference, REGISTRY/REPO:TAG) is none, and a 404 lets the CLI go on to the image.
    if (!answered && request.method == "GET" && path.size() > 3 && path.front() == "containers" &&
        path.back() == "json") {
      std::string name = path[1];
      for (size_t i = 2; i + 1 < path.size(); ++i) name += "/" + path[i];
      return error_reply(404, "No such container: " + name);
    }
    if (!answered)
      return error_reply(501, request.method + " " + request.path + " is not implemented by sandcell's Docker API");
    reply = std::move(*answered);
  } catch (const ApiError& e) {
    return error_reply(e.status, e.message);
  } catch (const Error& e) {
    return error_reply(e.input_error() ? 400 : 500, e.what());
  } catch (const std::exception& e) {
    return error_reply(500, e.what());
  }
  reply.headers.emplace("Api-Version", kApiVersion);
  reply.headers.emplace("Server", "sandcell");
  return reply;
}

}  // namespace sandcell::dockerapi
