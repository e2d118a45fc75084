// GET /events: the persisted event log (events.hpp) filtered, the past part from `since`, then
// followed until `until` passes, the client goes or the server stops.
#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <thread>

#include "api_error.hpp"
#include "api_filters.hpp"
#include "container_io.hpp"
#include "container_wake.hpp"
#include "events.hpp"
#include "routes.hpp"

namespace sandcell::dockerapi {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
constexpr auto kFallbackPoll = std::chrono::milliseconds(200);  // without inotify
constexpr auto kLostSupervisorSweep = std::chrono::seconds(1);
constexpr auto kKeepalive = std::chrono::seconds(2);

// <store>/docker, where events.jsonl is appended and rotated: a follower sleeps until it changes.
runtime::UniqueFd watch_event_log(const std::string& store_root) {
  runtime::UniqueFd fd(inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (fd && inotify_add_watch(fd.get(), (store_root + "/docker").c_str(),
                              IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_ONLYDIR) < 0)
    fd.reset();
  return fd;
}

int64_t event_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool event_matches(const Filters& f, const json& event) {
  auto any = [&f](const char* key, const std::function<bool(const std::string&)>& match) {
    auto it = f.find(key);
    return it == f.end() || it->second.empty() || std::any_of(it->second.begin(), it->second.end(), match);
  };
  std::string type = event.value("Type", ""), action = event.value("Action", "");
  const json actor = event.contains("Actor") && event["Actor"].is_object() ? event["Actor"] : json::object();
  const std::string id = actor.contains("ID") && actor["ID"].is_string() ? actor["ID"].get<std::string>() : "";
  std::map<std::string, std::string> attributes;
  if (actor.contains("Attributes") && actor["Attributes"].is_object())
    for (const auto& [key, value] : actor["Attributes"].items())
      if (value.is_string()) attributes[key] = value.get<std::string>();
  if (!any("type", [&](const std::string& v) { return v == type; })) return false;
  if (!any("event", [&](const std::string& v) { return v == action; })) return false;
  if (!any("container", [&](const std::string& v) {
        return type == "container" && (id.starts_with(v) || attributes["name"] == v || "/" + attributes["name"] == v);
      }))
    return false;
  if (!any("image", [&](const std::string& v) {
        return attributes["image"] == v || (type == "image" && (id == v || attributes["name"] == v));
      }))
    return false;
  if (f.contains("label") && !labels_match(f.at("label"), attributes)) return false;
  return true;
}

class EventStream {
 public:
  EventStream(const ApiContext& api, Filters filters, std::optional<int64_t> since, std::optional<int64_t> until)
      : api_(api), filters_(std::move(filters)), since_(since), until_(until),
        watch_(watch_event_log(api.store_root)) {  // armed before the first read
    note_lost_supervisors(api_.store_root, api_.containers);
    // Past events only with `since` (Docker's rule); the cursor moves past them either way.
    for (json& event : read_events(api_.store_root, cursor_))
      if (since_ && in_window(event)) pending_ += event.dump() + "\n";
  }

  // Ends the body on any failure (a stream callback must not throw into libmicrohttpd).
  size_t next(char* buffer, size_t size) {
    try {
      return next_or_throw(buffer, size);
    } catch (const std::exception&) {
      return 0;
    }
  }

 private:
  size_t next_or_throw(char* buffer, size_t size) {
    const auto last_keepalive = Clock::now();
    while (pending_.empty()) {
      if (ended_ || streams_ending() || (until_ && event_now_ns() > *until_)) {
        ended_ = true;
        return 0;
      }
      sleep_until_written(last_keepalive + kKeepalive);
      if (Clock::now() >= next_sweep_) {
        note_lost_supervisors(api_.store_root, api_.containers);
        next_sweep_ = Clock::now() + kLostSupervisorSweep;
      }
      for (json& event : read_events(api_.store_root, cursor_))
        if (in_window(event)) pending_ += event.dump() + "\n";
      // Without `until` the stream has no end of its own: a newline (whitespace between JSON
      // documents) now and then lets the server see a client that went away.
      if (pending_.empty() && !until_ && Clock::now() - last_keepalive > kKeepalive) pending_ = "\n";
    }
    size_t n = std::min(size, pending_.size());
    std::copy_n(pending_.data(), n, buffer);
    pending_.erase(0, n);
    return n;
  }

  // Until the event log changes, the server stops, or the next thing to do on time: the sweep
  // for killed supervisors (whose die nobody else would write while no one waits on them), a
  // keepalive, `until`.
  void sleep_until_written(Clock::time_point keepalive) {
    Clock::time_point wake = std::min(next_sweep_, keepalive);
    if (until_) wake = std::min(wake, Clock::now() + std::chrono::nanoseconds(std::max<int64_t>(*until_ - event_now_ns(), 0)) +
                                          std::chrono::milliseconds(1));
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(wake - Clock::now()).count() + 1;
    if (!watch_) ms = std::min<int64_t>(ms, kFallbackPoll.count());
    pollfd fds[2] = {{.fd = watch_.get(), .events = POLLIN, .revents = 0},
                     {.fd = server_stopping_fd(), .events = POLLIN, .revents = 0}};
    if (poll(fds, 2, static_cast<int>(std::clamp<int64_t>(ms, 0, 1 << 30))) > 0 && fds[0].revents) {
      char drained[4096];
      while (read(watch_.get(), drained, sizeof drained) > 0) {
      }
    }
  }

  bool in_window(const json& event) const {
    try {
      int64_t t = event.value("timeNano", int64_t{0});
      if (since_ && t < *since_) return false;
      if (until_ && t > *until_) return false;
      return event_matches(filters_, event);
    } catch (const std::exception&) {
      return false;  // a line of another shape
    }
  }

  const ApiContext& api_;
  Filters filters_;
  std::optional<int64_t> since_, until_;
  EventCursor cursor_;
  runtime::UniqueFd watch_;
  Clock::time_point next_sweep_ = Clock::now() + kLostSupervisorSweep;
  std::string pending_;
  bool ended_ = false;
};

HttpReply event_stream_reply(const ApiContext& api, const HttpRequest& request) {
  Filters filters = parse_filters(request, {"type", "event", "container", "image", "label"});
  std::optional<int64_t> since, until;
  if (auto s = request.param("since"); s && !s->empty()) since = parse_timestamp_ns(*s, "since");
  if (auto u = request.param("until"); u && !u->empty()) until = parse_timestamp_ns(*u, "until");
  if (since && until && *since > *until) throw bad_request("since must not be after until");
  auto stream = std::make_shared<EventStream>(api, std::move(filters), since, until);
  HttpReply reply;
  reply.stream = [stream](char* buffer, size_t size) { return stream->next(buffer, size); };
  return reply;
}

// The three networks sandcell offers (docs/docker-api.md, "Mapping"): what NetworkMode picks.
struct NetworkInfo {
  const char* name;
  const char* id;
  const char* driver;
  const char* policy;
};
constexpr NetworkInfo kNetworks[] = {
    {"bridge", "5b3a2f6c0e1d4a7b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d", "bridge",
     "sandcell full: NAT, private and metadata ranges dropped; with the label sandcell.net=allow:HOST[,HOST...] "
     "sandcell allow: only those hosts, through sandcell's proxy"},
    {"host", "7c4b3a2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b", "host",
     "refused: a sandbox never shares the host's network namespace (unless serve --docker-allow-host-network)"},
    {"none", "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a0f9e8d", "null",
     "sandcell none: loopback only"},
};

json network_json(const ApiContext& api, const NetworkInfo& n, bool with_containers) {
  json containers = json::object();
  if (with_containers)
    for (const ContainerDir& c : api.containers.list()) {
      try {
        json created = c.create_request();
        std::string mode = created["HostConfig"].value("NetworkMode", "none");
        if (mode == "default") mode = "bridge";
        if (mode != n.name || c.state().status != "running") continue;
        containers[c.id()] = {{"Name", created.value("Name", "")}, {"EndpointID", ""}, {"MacAddress", ""},
                              {"IPv4Address", ""}, {"IPv6Address", ""}};
      } catch (const std::exception&) {
      }
    }
  return {{"Name", n.name}, {"Id", n.id}, {"Created", "0001-01-01T00:00:00Z"}, {"Scope", "local"},
          {"Driver", n.driver}, {"EnableIPv6", false},
          {"IPAM", {{"Driver", "default"}, {"Options", nullptr}, {"Config", json::array()}}},
          {"Internal", false}, {"Attachable", false}, {"Ingress", false}, {"ConfigFrom", {{"Network", ""}}},
          {"ConfigOnly", false}, {"Containers", containers},
          {"Options", {{"sandcell.policy", std::string(n.name) == "host" && api.network.allow_host
                                               ? "sandcell host: the host's network namespace (serve "
                                                 "--docker-allow-host-network); the rest of the sandbox stays"
                                               : n.policy}}},
          {"Labels", json::object()}};
}

HttpReply list_networks(const ApiContext& api, const HttpRequest& request) {
  Filters filters = parse_filters(request, {"name", "id", "driver", "type", "scope"});
  json out = json::array();
  for (const NetworkInfo& n : kNetworks) {
    auto any = [&filters](const char* key, const std::function<bool(const std::string&)>& match) {
      auto it = filters.find(key);
      return it == filters.end() || std::any_of(it->second.begin(), it->second.end(), match);
    };
    if (!any("name", [&](const std::string& v) { return std::string(n.name).find(v) != std::string::npos; })) continue;
    if (!any("id", [&](const std::string& v) { return std::string(n.id).starts_with(v); })) continue;
    if (!any("driver", [&](const std::string& v) { return v == n.driver; })) continue;
    if (!any("type", [&](const std::string& v) { return v == "builtin"; })) continue;
    if (!any("scope", [&](const std::string& v) { return v == "local"; })) continue;
    out.push_back(network_json(api, n, false));
  }
  return json_reply(200, out);
}

HttpReply inspect_network(const ApiContext& api, const std::string& key) {
  for (const NetworkInfo& n : kNetworks)
    if (key == n.name || key == n.id) return json_reply(200, network_json(api, n, true));
  const NetworkInfo* found = nullptr;
  for (const NetworkInfo& n : kNetworks)
    if (!key.empty() && std::string(n.id).starts_with(key)) found = found ? nullptr : &n;
  if (!found) throw not_found("network " + key + " not found");
  return json_reply(200, network_json(api, *found, true));
}

}  // namespace

std::optional<HttpReply> events_route(const ApiContext& api, const HttpRequest& request, const Segments& path) {
  if (path == Segments{"events"} && request.method == "GET") return event_stream_reply(api, request);
  return std::nullopt;
}

// Networks are sandcell's fixed policies: create, connect, disconnect, delete and prune are not
// offered (501 by falling through).
std::optional<HttpReply> network_route(const ApiContext& api, const HttpRequest& request, const Segments& path) {
  if (path.empty() || path[0] != "networks" || request.method != "GET") return std::nullopt;
  if (path.size() == 1) return list_networks(api, request);
  if (path.size() == 2) return inspect_network(api, path[1]);
  return std::nullopt;
}

SupervisorWatch::SupervisorWatch(const ApiContext& api)
    : thread_([&api](std::stop_token stop) {
        std::mutex mutex;
        std::condition_variable_any wake;
        while (!stop.stop_requested()) {
          try {
            note_lost_supervisors(api.store_root, api.containers);
          } catch (const std::exception&) {
          }
          std::unique_lock lock(mutex);
          wake.wait_for(lock, stop, std::chrono::seconds(1), [] { return false; });
        }
      }) {}

}  // namespace sandcell::dockerapi
