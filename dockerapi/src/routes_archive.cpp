// docker cp: GET, HEAD and PUT /containers/{id}/archive?path=... on a running container
// (container_archive.hpp). The container's root is the one its processes see, taken once its
// init is confined (runtime::open_sandbox_root): never the host's.
#include <unistd.h>

#include <memory>

#include "api_error.hpp"
#include "container_archive.hpp"
#include "container_processes.hpp"
#include "routes.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::dockerapi {
namespace {

using runtime::UniqueFd;

UniqueFd container_root(const ApiContext& api, const ContainerDir& container) {
  RunningSandbox sandbox;
  try {
    sandbox = running_sandbox(api.store_root, container);
  } catch (const ApiError& e) {
    if (e.status != 409) throw;
    throw conflict("sandcell copies files only from and into a running container; " +
                   container.id() + " is not running");
  }
  return runtime::open_sandbox_root(sandbox.spec, sandbox.target);
}

std::string path_param(const HttpRequest& request) {
  std::string path = request.param("path").value_or("");
  if (path.empty()) throw bad_request("path is required");
  if (path[0] != '/') path = "/" + path;  // Docker: relative to the container's root here
  return path;
}

HttpReply stat_reply(const ContainerPathStat& stat) {
  HttpReply reply;
  reply.headers["X-Docker-Container-Path-Stat"] = path_stat_header(stat);
  reply.body = "";
  return reply;
}

HttpReply get_archive(const ApiContext& api, const ContainerDir& container,
                      const std::string& path) {
  UniqueFd root = container_root(api, container);
  ContainerPathStat stat = stat_in_container(root.get(), path);
  auto tar = std::make_shared<UniqueFd>(tar_from_container(root.get(), path, container.path()));
  HttpReply reply = streamed_file(tar, "application/x-tar");
  reply.headers = stat_reply(stat).headers;
  return reply;
}

}  // namespace

std::optional<HttpReply> archive_route(const ApiContext& api, const HttpRequest& request,
                                       const Segments& path) {
  if (path.size() != 3 || path[0] != "containers" || path[2] != "archive") return std::nullopt;
  ContainerDir container = api.containers.find(path[1]);
  const std::string where = path_param(request);
  if (request.method == "HEAD") {
    UniqueFd root = container_root(api, container);
    return stat_reply(stat_in_container(root.get(), where));
  }
  if (request.method == "GET") return get_archive(api, container, where);
  if (request.method == "PUT") {
    UniqueFd root = container_root(api, container);
    untar_into_container(root.get(), where, request.body);
    HttpReply reply;
    reply.body = "";
    return reply;
  }
  return std::nullopt;
}

}  // namespace sandcell::dockerapi
