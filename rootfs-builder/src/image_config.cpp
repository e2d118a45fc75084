// Image config and manifest <-> JSON. nlohmann::json objects are std::map-backed, so dump()
// writes keys sorted: the canonical form that makes digests reproducible.
#include <sys/utsname.h>

#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <nlohmann/json.hpp>

#include "sandcell/rootfs_builder/image.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/bounded_json.hpp"

namespace sandcell::rootfs_builder {
namespace {

using nlohmann::json;

template <typename T>
void get_if(const json& j, const char* key, T& out) {
  if (auto it = j.find(key); it != j.end() && !it->is_null()) it->get_to(out);
}

json set_as_object(const std::set<std::string>& keys) {
  json j = json::object();
  for (const auto& k : keys) j[k] = json::object();
  return j;
}

std::set<std::string> object_keys(const json& j, const char* key) {
  std::set<std::string> out;
  if (auto it = j.find(key); it != j.end() && it->is_object())
    for (const auto& [k, _] : it->items()) out.insert(k);
  return out;
}

json healthcheck_to_json(const Healthcheck& h) {
  json j = {{"Test", h.test}};
  if (h.interval_ns != 0) j["Interval"] = h.interval_ns;
  if (h.timeout_ns != 0) j["Timeout"] = h.timeout_ns;
  if (h.start_period_ns != 0) j["StartPeriod"] = h.start_period_ns;
  if (h.retries != 0) j["Retries"] = h.retries;
  return j;
}

Healthcheck healthcheck_from_json(const json& j) {
  Healthcheck h;
  get_if(j, "Test", h.test);
  get_if(j, "Interval", h.interval_ns);
  get_if(j, "Timeout", h.timeout_ns);
  get_if(j, "StartPeriod", h.start_period_ns);
  get_if(j, "Retries", h.retries);
  return h;
}

json container_config_to_json(const ContainerConfig& c) {
  json j = json::object();
  if (!c.user.empty()) j["User"] = c.user;
  if (!c.env.empty()) j["Env"] = c.env;
  if (c.entrypoint) j["Entrypoint"] = *c.entrypoint;
  if (c.cmd) j["Cmd"] = *c.cmd;
  if (!c.working_dir.empty()) j["WorkingDir"] = c.working_dir;
  if (!c.labels.empty()) j["Labels"] = c.labels;
  if (!c.exposed_ports.empty()) j["ExposedPorts"] = set_as_object(c.exposed_ports);
  if (!c.volumes.empty()) j["Volumes"] = set_as_object(c.volumes);
  if (!c.stop_signal.empty()) j["StopSignal"] = c.stop_signal;
  if (c.healthcheck) j["Healthcheck"] = healthcheck_to_json(*c.healthcheck);
  if (!c.on_build.empty()) j["OnBuild"] = c.on_build;
  if (!c.shell.empty()) j["Shell"] = c.shell;
  return j;
}

ContainerConfig container_config_from_json(const json& j) {
  ContainerConfig c;
  get_if(j, "User", c.user);
  get_if(j, "Env", c.env);
  if (auto it = j.find("Entrypoint"); it != j.end() && it->is_array()) c.entrypoint = *it;
  if (auto it = j.find("Cmd"); it != j.end() && it->is_array()) c.cmd = *it;
  get_if(j, "WorkingDir", c.working_dir);
  get_if(j, "Labels", c.labels);
  c.exposed_ports = object_keys(j, "ExposedPorts");
  c.volumes = object_keys(j, "Volumes");
  get_if(j, "StopSignal", c.stop_signal);
  if (auto it = j.find("Healthcheck"); it != j.end() && it->is_object())
    c.healthcheck = healthcheck_from_json(*it);
  get_if(j, "OnBuild", c.on_build);
  get_if(j, "Shell", c.shell);
  return c;
}

json history_to_json(const HistoryEntry& h) {
  json j = json::object();
  if (!h.created.empty()) j["created"] = h.created;
  if (!h.created_by.empty()) j["created_by"] = h.created_by;
  if (!h.author.empty()) j["author"] = h.author;
  if (!h.comment.empty()) j["comment"] = h.comment;
  if (h.empty_layer) j["empty_layer"] = true;
  return j;
}

HistoryEntry history_from_json(const json& j) {
  HistoryEntry h;
  get_if(j, "created", h.created);
  get_if(j, "created_by", h.created_by);
  get_if(j, "author", h.author);
  get_if(j, "comment", h.comment);
  get_if(j, "empty_layer", h.empty_layer);
  return h;
}

json parse_object(std::string_view text, const char* what) {
  json j = parse_bounded_json_or_discarded(text);
  if (j.is_discarded() || !j.is_object())
    throw Error::invalid(std::string(what) + ": not a JSON object");
  return j;
}

}  // namespace

std::string config_to_json(const ImageConfig& c) {
  json j = {{"architecture", c.architecture}, {"os", c.os}};
  if (!c.created.empty()) j["created"] = c.created;
  if (!c.author.empty()) j["author"] = c.author;
  if (!c.variant.empty()) j["variant"] = c.variant;
  j["config"] = container_config_to_json(c.config);
  j["rootfs"] = {{"type", "layers"}, {"diff_ids", c.diff_ids}};
  json history = json::array();
  for (const auto& h : c.history) history.push_back(history_to_json(h));
  if (!history.empty()) j["history"] = std::move(history);
  return j.dump();
}

ImageConfig config_from_json(std::string_view text) {
  try {
    json j = parse_object(text, "image config");
    ImageConfig c;
    get_if(j, "created", c.created);
    get_if(j, "author", c.author);
    get_if(j, "architecture", c.architecture);
    get_if(j, "os", c.os);
    get_if(j, "variant", c.variant);
    if (auto it = j.find("config"); it != j.end() && it->is_object())
      c.config = container_config_from_json(*it);
    if (auto it = j.find("rootfs"); it != j.end() && it->is_object())
      get_if(*it, "diff_ids", c.diff_ids);
    if (auto it = j.find("history"); it != j.end() && it->is_array())
      for (const auto& h : *it) c.history.push_back(history_from_json(h));
    return c;
  } catch (const json::exception& e) {
    throw Error::invalid(std::string("image config: ") + e.what());
  }
}

std::optional<std::int64_t> source_date_epoch() {
  const char* env = std::getenv("SOURCE_DATE_EPOCH");
  if (env == nullptr || *env == '\0') return std::nullopt;
  char* end = nullptr;
  errno = 0;
  long long value = std::strtoll(env, &end, 10);
  if (errno != 0 || *end != '\0' || value < 0)
    throw Error::invalid("SOURCE_DATE_EPOCH must be a non-negative integer: " + std::string(env));
  return value;
}

std::string image_timestamp() {
  std::time_t t = source_date_epoch().value_or(std::time(nullptr));
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string host_architecture() {
  utsname u{};
  ::uname(&u);
  static const std::map<std::string, std::string> kGoArch = {
      {"x86_64", "amd64"}, {"aarch64", "arm64"},   {"armv7l", "arm"},  {"i686", "386"},
      {"i386", "386"},     {"ppc64le", "ppc64le"}, {"s390x", "s390x"}, {"riscv64", "riscv64"}};
  auto it = kGoArch.find(u.machine);
  return it != kGoArch.end() ? it->second : u.machine;
}

}  // namespace sandcell::rootfs_builder
