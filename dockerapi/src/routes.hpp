#pragma once
// The Engine API's endpoints, by group. Each returns the reply or throws ApiError.
#include <string>
#include <vector>

#include "container_store.hpp"
#include "http_server.hpp"

namespace sandcell::dockerapi {

constexpr const char* kApiVersion = "1.43";
constexpr const char* kMinApiVersion = "1.24";

struct ApiContext {
  std::string store_root;
  std::string supervisor_exe;
  ContainerStore containers;
};

// Path segments after the version prefix: "/v1.43/containers/x/json" → {"containers","x","json"}.
using Segments = std::vector<std::string>;

HttpReply json_reply(int status, const nlohmann::json& body);
// "2026-12-05T06:38:29.03Z" → seconds since the epoch (0 when unreadable): list entries' Created.
int64_t unix_time(const std::string& rfc3339);

std::optional<HttpReply> system_route(const ApiContext& api, const HttpRequest& request, const Segments& path);
std::optional<HttpReply> image_route(const ApiContext& api, const HttpRequest& request, const Segments& path);
std::optional<HttpReply> archive_route(const ApiContext& api, const HttpRequest& request,
                                       const Segments& path);
std::optional<HttpReply> exec_route(const ApiContext& api, const HttpRequest& request,
                                    const Segments& path);
std::optional<HttpReply> container_route(const ApiContext& api, const HttpRequest& request, const Segments& path);

// The whole API: strips the version, dispatches, turns ApiError into Docker's error shape.
HttpReply route(const ApiContext& api, const HttpRequest& request);

}  // namespace sandcell::dockerapi
