#pragma once
// The Engine API's endpoints, by group. Each returns the reply or throws ApiError.
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "container_store.hpp"
#include "create_request.hpp"
#include "http_server.hpp"
#include "volume_store.hpp"
#include "sandcell/rootfs_builder/store.hpp"

namespace sandcell::dockerapi {

constexpr const char* kApiVersion = "1.43";
constexpr const char* kMinApiVersion = "1.24";

struct ApiContext {
  std::string store_root;
  std::string supervisor_exe;
  ContainerStore containers;
  VolumeStore volumes;
  uint64_t max_load_bytes = 0;
  DiskBounds disk;
  LogBounds log;
  NetworkOptions network;
};

// Path segments after the version prefix: "/v1.43/containers/x/json" → {"containers","x","json"}.
using Segments = std::vector<std::string>;

HttpReply json_reply(int status, const nlohmann::json& body);
// "2026-12-05T06:38:29.03Z" → seconds since the epoch (0 when unreadable): list entries' Created.
int64_t unix_time(const std::string& rfc3339);

// The name in `/images/{name}/<action>`, which may hold slashes (registry/org/repo:tag);
// `trailing` segments follow it.
std::string image_name(const Segments& path, size_t trailing);
// The image a client named; ApiError 404 when the store has none.
rootfs_builder::ImageRecord resolve_image(const rootfs_builder::ImageStore& store, const std::string& name);

// A file (open, at its start) streamed as the body: a saved image, a container's tar.
HttpReply streamed_file(std::shared_ptr<runtime::UniqueFd> file, const char* content_type);

std::optional<HttpReply> system_route(const ApiContext& api, const HttpRequest& request, const Segments& path);
std::optional<HttpReply> image_route(const ApiContext& api, const HttpRequest& request, const Segments& path);
std::optional<HttpReply> image_archive_route(const ApiContext& api, const HttpRequest& request,
                                             const Segments& path);
// Pull, push (routes_image_transfer.cpp) and build (routes_build.cpp).
std::optional<HttpReply> image_transfer_route(const ApiContext& api, const HttpRequest& request,
                                              const Segments& path);
std::optional<HttpReply> archive_route(const ApiContext& api, const HttpRequest& request,
                                       const Segments& path);
std::optional<HttpReply> exec_route(const ApiContext& api, const HttpRequest& request,
                                    const Segments& path);
std::optional<HttpReply> volume_route(const ApiContext& api, const HttpRequest& request, const Segments& path);
std::optional<HttpReply> container_state_route(const ApiContext& api, const HttpRequest& request,
                                               const Segments& path);
std::optional<HttpReply> events_route(const ApiContext& api, const HttpRequest& request, const Segments& path);
std::optional<HttpReply> network_route(const ApiContext& api, const HttpRequest& request, const Segments& path);
std::optional<HttpReply> container_route(const ApiContext& api, const HttpRequest& request, const Segments& path);

// While it lives, a thread notes every second the containers whose supervisor died without
// recording the end (their `die` event, events.hpp): the server sees them without a client asking.
class SupervisorWatch {
 public:
  explicit SupervisorWatch(const ApiContext& api);

 private:
  std::jthread thread_;
};

// The whole API: strips the version, dispatches, turns ApiError into Docker's error shape.
HttpReply route(const ApiContext& api, const HttpRequest& request);
// Which request bodies go to a file instead of memory: `POST /images/load`'s archive and
// `POST /build`'s context.
std::optional<BodySpool> body_spool(const ApiContext& api, const HttpRequest& request);

}  // namespace sandcell::dockerapi
