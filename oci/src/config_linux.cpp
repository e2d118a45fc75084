// config.json "linux" → namespaces, id maps, devices, sysctl, seccomp, paths (resources:
// cgroup_resources.cpp).
#include <sys/mount.h>
#include <sys/personality.h>

#include "config_parts.hpp"
#include "json_fields.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/seccomp/docker_profile.hpp"

namespace sandcell::oci {
namespace {

using nlohmann::json;
namespace f = fields;

std::string at(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

std::vector<runtime::Namespace> parse_namespaces(const json& value) {
  std::vector<runtime::Namespace> out;
  const json& list = f::array(value, "linux.namespaces");
  for (size_t i = 0; i < list.size(); ++i) {
    std::string path = at("linux.namespaces", i);
    f::object(list[i], path);
    const json* type = f::find(list[i], "type");
    if (type == nullptr) throw Error::invalid(path + ".type: missing");
    runtime::Namespace ns{.type = f::text(*type, path + ".type"), .path = {}};
    static const char* kKnown[] = {"pid", "network", "mount", "ipc", "uts", "user", "cgroup", "time"};
    if (std::find(std::begin(kKnown), std::end(kKnown), ns.type) == std::end(kKnown))
      throw Error::invalid(path + ".type: unknown namespace '" + ns.type + "'");
    for (const runtime::Namespace& seen : out)
      if (seen.type == ns.type) throw Error::invalid(path + ".type: namespace '" + ns.type + "' listed twice");
    if (const json* p = f::find(list[i], "path")) ns.path = f::text(*p, path + ".path");
    if (!ns.path.empty() && ns.path[0] != '/')
      throw Error::invalid(path + ".path: '" + ns.path + "' is not absolute");
    out.push_back(ns);
  }
  return out;
}

std::vector<runtime::IdMapping> parse_id_mappings(const json& value, const std::string& path) {
  std::vector<runtime::IdMapping> out;
  const json& list = f::array(value, path);
  for (size_t i = 0; i < list.size(); ++i) {
    const json& m = f::object(list[i], at(path, i));
    auto number = [&](const char* key) {
      const json* v = f::find(m, key);
      if (v == nullptr) throw Error::invalid(at(path, i) + "." + key + ": missing");
      return static_cast<uint32_t>(f::unsigned_integer(*v, at(path, i) + "." + key));
    };
    out.push_back({.container_id = number("containerID"), .host_id = number("hostID"), .size = number("size")});
  }
  return out;
}

std::vector<runtime::Device> parse_devices(const json& value) {
  std::vector<runtime::Device> out;
  const json& list = f::array(value, "linux.devices");
  for (size_t i = 0; i < list.size(); ++i) {
    std::string path = at("linux.devices", i);
    const json& d = f::object(list[i], path);
    runtime::Device device;
    const json* p = f::find(d, "path");
    const json* t = f::find(d, "type");
    if (p == nullptr || t == nullptr) throw Error::invalid(path + ": path and type are required");
    device.path = f::text(*p, path + ".path");
    std::string type = f::text(*t, path + ".type");
    if (type != "c" && type != "b" && type != "u" && type != "p")
      throw Error::invalid(path + ".type: must be c, b, u or p, got '" + type + "'");
    device.type = type == "u" ? 'c' : type[0];
    if (const json* v = f::find(d, "major")) device.major = static_cast<uint32_t>(f::unsigned_integer(*v, path + ".major"));
    if (const json* v = f::find(d, "minor")) device.minor = static_cast<uint32_t>(f::unsigned_integer(*v, path + ".minor"));
    if (const json* v = f::find(d, "fileMode")) device.file_mode = static_cast<uint32_t>(f::unsigned_integer(*v, path + ".fileMode"));
    if (const json* v = f::find(d, "uid")) device.uid = static_cast<uid_t>(f::unsigned_integer(*v, path + ".uid"));
    if (const json* v = f::find(d, "gid")) device.gid = static_cast<gid_t>(f::unsigned_integer(*v, path + ".gid"));
    out.push_back(device);
  }
  return out;
}

// runtime-spec: {"monotonic": {"secs": N, "nanosecs": M}, "boottime": {...}}. The kernel's
// bounds: nanosecs below 1e9, |secs| at most KTIME_SEC_MAX / 2 (about 146 years); whether the
// clock stays >= 0 with a negative offset only the kernel knows (it says ERANGE at create).
std::vector<runtime::TimeOffset> parse_time_offsets(const json& value) {
  constexpr int64_t kMaxSecs = INT64_MAX / 1000000000 / 2;
  std::vector<runtime::TimeOffset> out;
  for (const auto& [clock, entry] : f::object(value, "linux.timeOffsets").items()) {
    std::string path = "linux.timeOffsets." + clock;
    if (clock != "monotonic" && clock != "boottime")
      throw Error::invalid(path + ": unknown clock (a time namespace offsets monotonic and boottime)");
    f::object(entry, path);
    runtime::TimeOffset offset{.clock = clock};
    if (const json* v = f::find(entry, "secs")) offset.secs = f::integer(*v, path + ".secs");
    if (offset.secs > kMaxSecs || offset.secs < -kMaxSecs)
      throw Error::invalid(path + ".secs: " + std::to_string(offset.secs) + " is out of range (at most " +
                           std::to_string(kMaxSecs) + " either way)");
    if (const json* v = f::find(entry, "nanosecs")) {
      uint64_t nanosecs = f::unsigned_integer(*v, path + ".nanosecs");
      if (nanosecs > 999999999)
        throw Error::invalid(path + ".nanosecs: " + std::to_string(nanosecs) + " is not below 1000000000");
      offset.nanosecs = static_cast<uint32_t>(nanosecs);
    }
    out.push_back(offset);
  }
  return out;
}

// The index of the namespace of `type` in linux.namespaces, or -1.
int namespace_index(const runtime::Container& c, const char* type) {
  for (size_t i = 0; i < c.namespaces.size(); ++i)
    if (c.namespaces[i].type == type) return static_cast<int>(i);
  return -1;
}

// runc's rules for settings that belong to a namespace. Mappings with a user namespace joined by
// path are checked against that namespace's maps when the container is created.
void check_namespace_settings(const runtime::Container& c) {
  int user = namespace_index(c, "user");
  bool mappings = !c.uid_mappings.empty() || !c.gid_mappings.empty();
  const char* mapping_field = c.uid_mappings.empty() ? "linux.gidMappings" : "linux.uidMappings";
  if (user < 0 && mappings)
    throw Error::invalid(std::string(mapping_field) + ": set, but linux.namespaces has no user namespace");
  if (user >= 0 && c.namespaces[user].path.empty() && !mappings)
    throw Error::invalid(at("linux.namespaces", user) +
                         ": a new user namespace needs linux.uidMappings and linux.gidMappings");
  if (c.time_offsets.empty()) return;
  int time = namespace_index(c, "time");
  if (time < 0)
    throw Error::invalid("linux.timeOffsets: needs a new time namespace (a linux.namespaces entry of type \"time\")");
  if (!c.namespaces[time].path.empty())
    throw Error::invalid("linux.timeOffsets: cannot be applied to the time namespace joined by " +
                         at("linux.namespaces", time) +
                         ".path (its offsets were fixed when its first process entered it)");
}

unsigned long parse_propagation(const std::string& name) {
  static const std::pair<const char*, unsigned long> kModes[] = {
      {"private", MS_PRIVATE}, {"rprivate", MS_PRIVATE | MS_REC}, {"shared", MS_SHARED},
      {"rshared", MS_SHARED | MS_REC}, {"slave", MS_SLAVE}, {"rslave", MS_SLAVE | MS_REC},
      {"unbindable", MS_UNBINDABLE}, {"runbindable", MS_UNBINDABLE | MS_REC}};
  for (const auto& [mode, flags] : kModes)
    if (name == mode) return flags;
  throw Error::invalid("linux.rootfsPropagation: unknown mode '" + name + "'");
}

std::optional<unsigned long> parse_personality(const json& value) {
  const json& p = f::object(value, "linux.personality");
  const json* domain = f::find(p, "domain");
  if (domain == nullptr) throw Error::invalid("linux.personality.domain: missing");
  std::string name = f::text(*domain, "linux.personality.domain");
  if (name == "LINUX") return PER_LINUX;
  if (name == "LINUX32") return PER_LINUX32;
  throw Error::invalid("linux.personality.domain: must be LINUX or LINUX32, got '" + name + "'");
}

void parse_seccomp(const json& value, runtime::Spec& spec) {
  f::object(value, "linux.seccomp");
  if (f::find(value, "listenerPath"))
    throw Error::invalid("linux.seccomp.listenerPath: seccomp notify agents are not supported by sandcell-oci");
  seccomp::ProfileContext context;
  context.capabilities = spec.container->capabilities.bounding;
  seccomp::Profile profile = seccomp::parse_docker_profile(value, "linux.seccomp", context);
  // No supervisor answers SECCOMP_RET_USER_NOTIF in OCI mode: plain errno/kill actions only.
  spec.seccomp = seccomp::compile(profile);
}

void parse_paths(const json& linux, runtime::Spec& spec) {
  if (const json* v = f::find(linux, "maskedPaths")) spec.masked_paths = f::texts(*v, "linux.maskedPaths");
  if (const json* v = f::find(linux, "readonlyPaths")) spec.readonly_paths = f::texts(*v, "linux.readonlyPaths");
  for (const std::string& p : spec.masked_paths)
    if (p.empty() || p[0] != '/') throw Error::invalid("linux.maskedPaths: '" + p + "' is not absolute");
  for (const std::string& p : spec.readonly_paths)
    if (p.empty() || p[0] != '/') throw Error::invalid("linux.readonlyPaths: '" + p + "' is not absolute");
}

}  // namespace

void parse_linux(const json& linux, runtime::Spec& spec) {
  f::object(linux, "linux");
  runtime::Container& c = *spec.container;
  if (const json* v = f::find(linux, "namespaces")) c.namespaces = parse_namespaces(*v);
  if (const json* v = f::find(linux, "uidMappings")) c.uid_mappings = parse_id_mappings(*v, "linux.uidMappings");
  if (const json* v = f::find(linux, "gidMappings")) c.gid_mappings = parse_id_mappings(*v, "linux.gidMappings");
  if (const json* v = f::find(linux, "devices")) c.devices = parse_devices(*v);
  if (const json* v = f::find(linux, "cgroupsPath"))
    c.cgroups_path = f::text(*v, "linux.cgroupsPath");
  if (const json* v = f::find(linux, "sysctl")) {
    for (const auto& [key, value] : f::object(*v, "linux.sysctl").items())
      c.sysctl[key] = f::text(value, "linux.sysctl." + key);
  }
  if (const json* v = f::find(linux, "rootfsPropagation"))
    c.rootfs_propagation = parse_propagation(f::text(*v, "linux.rootfsPropagation"));
  if (const json* v = f::find(linux, "personality")) c.personality = parse_personality(*v);
  if (const json* v = f::find(linux, "timeOffsets")) c.time_offsets = parse_time_offsets(*v);
  check_namespace_settings(c);
  if (const json* v = f::find(linux, "seccomp")) parse_seccomp(*v, spec);
  parse_paths(linux, spec);
}

}  // namespace sandcell::oci
