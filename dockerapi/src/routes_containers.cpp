// /containers/...: create, inspect, start, attach, wait, logs, stop, kill, delete.
#include <signal.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <thread>

#include "api_error.hpp"
#include "api_filters.hpp"
#include "container_io.hpp"
#include "container_log.hpp"
#include "container_mounts.hpp"
#include "container_processes.hpp"
#include "container_tty.hpp"
#include "create_request.hpp"
#include "events.hpp"
#include "routes.hpp"
#include "sandcell/oci/lifecycle.hpp"
#include "sandcell/rootfs_builder/store.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/number.hpp"

namespace sandcell::dockerapi {
namespace {

using nlohmann::json;

HttpReply empty_reply(int status) {
  HttpReply reply;
  reply.status = status;
  reply.content_type.clear();
  return reply;
}

HttpReply no_content() { return empty_reply(204); }

HttpReply streamed(const char* content_type, BodyStream stream) {
  HttpReply reply;
  reply.content_type = content_type;
  reply.stream = std::move(stream);
  return reply;
}

json record_of(const ContainerDir& c) {
  std::ifstream in(c.file("record.json"));
  if (!in) return nullptr;
  return json::parse(in, nullptr, false);
}

json inspect_json(const ApiContext& api, const ContainerDir& c) {
  json request = c.create_request();
  ContainerState state = c.state();
  json config = request["Config"];
  std::vector<std::string> args = config.value("Entrypoint", std::vector<std::string>{});
  for (const std::string& a : config.value("Cmd", std::vector<std::string>{})) args.push_back(a);
  config["Cmd"] = config.value("Cmd", json());
  json host = request["HostConfig"];
  host["Memory"] = host.value("Memory", 0);
  host["NanoCpus"] = host.value("NanoCpus", 0);
  host["PidsLimit"] = host.value("PidsLimit", 0);
  host["Privileged"] = false;
  host["Init"] = true;  // sandcell's init is pid 1 in effect
  // As given or defaulted (container_log.hpp): json-file unless the client chose local or none
  // (docker-py reads run()'s output only from a driver it knows can be read back).
  host["LogConfig"] = log_config_of(request);
  return {{"Id", c.id()}, {"Created", request.value("Created", "")},
          {"Path", args.empty() ? "" : args[0]},
          {"Args", args.size() > 1 ? json(std::vector<std::string>(args.begin() + 1, args.end())) : json::array()},
          {"State", state_to_json(state)}, {"Image", request["ImageID"]}, {"Name", "/" + request.value("Name", "")},
          {"RestartCount", 0}, {"Driver", "overlay"}, {"Platform", "linux"}, {"Config", config},
          {"HostConfig", host}, {"Mounts", inspect_mounts(host.value("Mounts", json::array()), api.volumes)},
          {"NetworkSettings", {{"Networks", {{host.value("NetworkMode", "none"), json::object()}}}}},
          {"Sandcell", record_of(c)}};
}

HttpReply create(const ApiContext& api, const HttpRequest& request) {
  rootfs_builder::ImageStore images(api.store_root);
  json checked =
      check_create_request(request.body, request.param("name").value_or(""), images, api.volumes, api.disk, api.log, api.network);
  ContainerDir c = api.containers.create(checked);
  record_container_event(api.store_root, c, "create");
  return json_reply(201, {{"Id", c.id()}, {"Warnings", json::array()}});
}

HttpReply start(const ApiContext& api, const ContainerDir& c) {
  runtime::UniqueFd lock = lock_for_start(c);
  std::string status = c.state().status;
  if (status == "running") return empty_reply(304);
  check_network_allowed(c.create_request(), api.network);
  if (status == "exited") reset_for_start(c);  // `docker start` of a stopped container
  start_supervisor(api.supervisor_exe, api.store_root, c);
  return no_content();
}

HttpReply stop(const ApiContext& api, const ContainerDir& c, const HttpRequest& request) {
  std::optional<int> timeout;
  if (auto t = request.param("t")) {
    timeout = parse_number<int>(*t);
    if (!timeout) throw bad_request("invalid value for t: " + *t);
  }
  if (!stop_container(c, timeout, request.param("signal").value_or(""))) return empty_reply(304);
  record_container_event(api.store_root, c, "stop");
  return no_content();
}

HttpReply kill_container(const ApiContext& api, const ContainerDir& c, const HttpRequest& request) {
  int signal = SIGKILL;
  try {
    signal = oci::parse_signal(request.param("signal").value_or("SIGKILL"));
  } catch (const Error& e) {
    throw bad_request(e.what());
  }
  if (!signal_container(c, signal)) throw conflict("Container " + c.id() + " is not running");
  record_container_event(api.store_root, c, "kill", {{"signal", std::to_string(signal)}});
  return no_content();
}

HttpReply remove(const ApiContext& api, const ContainerDir& c, const HttpRequest& request) {
  if (c.state().status == "running") {
    if (!request.flag("force"))
      throw conflict("You cannot remove a running container " + c.id() + ". Stop the container before attempting removal or force remove");
    signal_container(c, SIGKILL);
    if (!wait_for_exit(c, 10000)) throw ApiError{500, "container " + c.id() + " did not stop after SIGKILL"};
  }
  json created = c.create_request();
  json mounts = created["HostConfig"].value("Mounts", json::array());
  api.containers.remove(c);
  record_event(api.store_root, container_event("destroy", c.id(), created));
  if (request.flag("v")) remove_anonymous_volumes(mounts, api.volumes, api.containers);
  return no_content();
}

bool has_tty(const ContainerDir& c) { return c.create_request()["Config"].value("Tty", false); }

// A Tty container's streams are the pty's bytes as they are (Docker's raw stream).
const char* stream_type(bool tty) {
  return tty ? "application/vnd.docker.raw-stream" : "application/vnd.docker.multiplexed-stream";
}

HttpReply attach(const ContainerDir& c, const HttpRequest& request) {
  if (!request.upgrade) throw bad_request("attach needs a hijacked connection (Upgrade: tcp)");
  bool tty = has_tty(c);
  AttachOptions options{.replay_log = request.flag("logs"), .follow = request.flag("stream"),
                        .forward_stdin = request.flag("stdin"), .stdout = request.flag("stdout"),
                        .stderr = request.flag("stderr"), .tail_lines = std::nullopt,
                        .since_ns = std::nullopt, .timestamps = false, .raw = tty};
  HttpReply reply;
  reply.content_type = stream_type(tty);
  reply.hijack = attach_connection(c, options);
  return reply;
}

HttpReply logs(const ContainerDir& c, const HttpRequest& request) {
  if (!log_policy_of(c.create_request()).readable())  // Docker's answer for the none driver
    throw ApiError{501, "configured logging driver does not support reading"};
  if (!request.flag("stdout") && !request.flag("stderr")) throw bad_request("you must choose at least one stream");
  std::optional<int64_t> since_ns;
  if (auto since = request.param("since"); since && *since != "0" && !since->empty())
    since_ns = parse_timestamp_ns(*since, "since");
  if (auto until = request.param("until"); until && *until != "0" && !until->empty())
    throw bad_request("logs: until is not supported by sandcell's Docker API yet");
  std::optional<uint64_t> tail_lines;
  if (auto tail = request.param("tail"); tail && *tail != "all" && !tail->empty()) {
    std::optional<int64_t> lines = parse_number<int64_t>(*tail);
    if (!lines) throw bad_request("invalid value for tail: " + *tail);  // a number or "all"
    if (*lines >= 0) tail_lines = static_cast<uint64_t>(*lines);     // negative: all, as Docker
  }
  AttachOptions options{.replay_log = true, .follow = request.flag("follow"), .forward_stdin = false,
                        .stdout = request.flag("stdout"), .stderr = request.flag("stderr"),
                        .tail_lines = tail_lines, .since_ns = since_ns, .timestamps = request.flag("timestamps"),
                        .raw = has_tty(c)};
  return streamed(stream_type(options.raw), log_stream(c, options));
}

// h and w: what TIOCSWINSZ takes (0 to 65535), else 400. Not running: 409. A container without
// Tty has no terminal to size: accepted, as Docker's runtime does.
HttpReply resize(const ContainerDir& c, const HttpRequest& request) {
  TerminalSize size = resize_request(request);
  if (c.state().status != "running") throw conflict("Container " + c.id() + " is not running");
  if (has_tty(c)) resize_container_terminal(c, size);
  return no_content();
}

HttpReply wait(const ContainerDir& c, const HttpRequest& request) {
  std::string condition = request.param("condition").value_or("not-running");
  if (condition.empty()) condition = "not-running";
  if (condition != "not-running" && condition != "next-exit" && condition != "removed")
    throw bad_request("invalid condition: \"" + condition + "\"");
  return streamed("application/json", wait_stream(c, condition));
}

}  // namespace

std::optional<HttpReply> container_route(const ApiContext& api, const HttpRequest& request, const Segments& path) {
  if (path.empty() || path[0] != "containers") return std::nullopt;
  const std::string& method = request.method;
  if (path.size() == 2 && path[1] == "create" && method == "POST") return create(api, request);
  if (path.size() == 2 && method == "DELETE") return remove(api, api.containers.find(path[1]), request);
  if (path.size() != 3) return std::nullopt;
  const std::string& verb = path[2];
  if (method == "GET" && verb == "json") return json_reply(200, inspect_json(api, api.containers.find(path[1])));
  if (method == "GET" && verb == "logs") return logs(api.containers.find(path[1]), request);
  if (method != "POST") return std::nullopt;
  if (verb == "start") return start(api, api.containers.find(path[1]));
  if (verb == "stop") return stop(api, api.containers.find(path[1]), request);
  if (verb == "kill") return kill_container(api, api.containers.find(path[1]), request);
  if (verb == "attach") return attach(api.containers.find(path[1]), request);
  if (verb == "wait") return wait(api.containers.find(path[1]), request);
  if (verb == "resize") return resize(api.containers.find(path[1]), request);
  return std::nullopt;
}

}  // namespace sandcell::dockerapi
