// Docker create body → the stored request → runtime::Spec.
#include "create_request.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cctype>
#include <regex>
#include <set>

#include "api_error.hpp"
#include "container_mounts.hpp"
#include "sandcell/apparmor/profile.hpp"
#include "sandcell/base/bounded_json.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/workspace_disk.hpp"
#include "sandcell/network/host_policy.hpp"
#include "sandcell/oci/lifecycle.hpp"
#include "sandcell/rootfs_builder/image_spec.hpp"
#include "sandcell/rootfs_builder/store.hpp"
#include "sandcell/seccomp/compiled_cache.hpp"
#include "sandcell/seccomp/docker_profile.hpp"

namespace sandcell::dockerapi {
namespace {

using nlohmann::json;

bool is_set(const json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return false;
  if (it->is_boolean()) return it->get<bool>();
  if (it->is_number()) return it->get<double>() != 0;
  if (it->is_string()) return !it->get<std::string>().empty();
  if (it->is_array() || it->is_object()) return !it->empty();
  return true;
}

// Fields that would weaken isolation: refused whatever else the request says.
void refuse_weakening(const json& host) {
  for (const char* field : {"Privileged", "Devices", "DeviceRequests", "DeviceCgroupRules", "CgroupParent", "CapAdd",
                            "Sysctls", "OomKillDisable", "PidMode", "UTSMode", "UsernsMode", "Cgroup",
                            "VolumesFrom", "Links"})
    if (is_set(host, field))
      throw bad_request("HostConfig." + std::string(field) + " is refused by sandcell: it would weaken the sandbox");
  // `--security-opt systempaths=unconfined` arrives as empty lists (the CLI turns it into them):
  // sandcell keeps Docker's masked and read-only paths whatever a client sends.
  for (const char* field : {"MaskedPaths", "ReadonlyPaths"})
    if (host.contains(field) && !host[field].is_null())
      throw bad_request(
          "HostConfig." + std::string(field) +
          " is refused by sandcell: it would weaken the sandbox (systempaths=unconfined); "
          "Docker's list is always applied");
  std::string ipc = host.value("IpcMode", "");
  if (!ipc.empty() && ipc != "private" && ipc != "none" && ipc != "shareable")
    throw bad_request("HostConfig.IpcMode " + ipc + " is refused by sandcell: it would weaken the sandbox");
  std::string runtime = host.value("Runtime", "");
  if (!runtime.empty() && runtime != "runc" && runtime != "sandcell")
    throw bad_request("HostConfig.Runtime " + runtime + " is not available: containers run in sandcell");
}

// A seccomp profile of SecurityOpt (`seccomp=<JSON>`: the docker CLI reads --security-opt
// seccomp=FILE and sends the file's text) parsed and compiled as the layer it becomes, with plain
// actions (the stack's one listener is sandcell's own filter's). Throws Error naming the rule.
runtime::SeccompProgram compile_seccomp_layer(const std::string& profile_text) {
  json profile_json = parse_bounded_json(profile_text);
  seccomp::Profile profile =
      seccomp::parse_docker_profile(profile_json, "HostConfig.SecurityOpt seccomp", {});
  runtime::SeccompProgram program = seccomp::compile(profile, {.report_denials = false});
  program.name = "docker-seccomp";
  return program;
}

// HostConfig.SecurityOpt: what can only add to sandcell's confinement is kept (as given, in the
// stored request: spec_for_container compiles the profiles again); what would take from it is
// refused naming the option. "key=value" or Docker's older "key:value".
json checked_security_opt(const json& host) {
  json kept = json::array();
  if (!is_set(host, "SecurityOpt")) return kept;
  if (!host["SecurityOpt"].is_array())
    throw bad_request("HostConfig.SecurityOpt must be an array of strings");
  for (const json& option : host["SecurityOpt"]) {
    if (!option.is_string())
      throw bad_request("HostConfig.SecurityOpt must be an array of strings");
    const std::string text = option.get<std::string>();
    const size_t split = text.find_first_of("=:");
    const std::string key = text.substr(0, split),
                      value = split == std::string::npos ? "" : text.substr(split + 1);
    const std::string what = "HostConfig.SecurityOpt " + text.substr(0, 100);
    if (key == "no-new-privileges" && (value.empty() || value == "true")) {
      kept.push_back(text);  // always on in sandcell
    } else if (key == "no-new-privileges") {
      throw bad_request(
          what +
          " is refused by sandcell: no_new_privs is always set (it would weaken the sandbox)");
    } else if (key == "seccomp" && value == "unconfined") {
      throw bad_request(what +
                        " is refused by sandcell: it would weaken the sandbox (a custom profile is "
                        "layered on sandcell's own filter instead)");
    } else if (key == "seccomp") {
      // dockerd keeps the last one given; one layer, and a second option a 400 rather than ignored.
      if (std::any_of(kept.begin(), kept.end(),
                      [](const json& k) { return k.get<std::string>().starts_with("seccomp"); }))
        throw bad_request(
            "HostConfig.SecurityOpt: seccomp is given twice (one profile per container)");
      try {
        compile_seccomp_layer(value);
      } catch (const std::exception& e) {
        throw bad_request("HostConfig.SecurityOpt seccomp: invalid profile: " +
                          std::string(e.what()));
      }
      kept.push_back(text);
    } else if (key == "apparmor" && value == apparmor::kDefaultProfile) {
      kept.push_back(text);  // what the sandbox gets wherever the host has AppArmor
    } else if (key == "apparmor") {
      throw bad_request(
          what + " is refused by sandcell: containers run under " + apparmor::kDefaultProfile +
          " where the host has AppArmor; another profile (or unconfined) could weaken the sandbox");
    } else if (key == "label" || (key == "systempaths" && value == "unconfined")) {
      throw bad_request(what + " is refused by sandcell: it would weaken the sandbox");
    } else {
      throw bad_request(
          what +
          " is not supported by sandcell (no-new-privileges, seccomp=<profile JSON>, apparmor=" +
          apparmor::kDefaultProfile + ")");
    }
  }
  return kept;
}

// HostConfig.ShmSize: bytes of the /dev/shm tmpfs; 0 or absent: Docker's default, 64 MiB. Its
// pages are charged to the container's memory limit, so the size only has to be sane.
uint64_t checked_shm_size(const json& host) {
  constexpr int64_t kDefault = 64ll << 20, kMax = 1ll << 40;
  if (!host.contains("ShmSize") || host["ShmSize"].is_null()) return kDefault;
  if (!host["ShmSize"].is_number_integer())
    throw bad_request("HostConfig.ShmSize must be an integer (bytes)");
  const int64_t bytes = host["ShmSize"].get<int64_t>();
  if (bytes < 0) throw bad_request("HostConfig.ShmSize: SHM size can not be less than 0");
  if (bytes > kMax)
    throw bad_request("HostConfig.ShmSize " + std::to_string(bytes) +
                      " is over sandcell's bound (1 TiB)");
  return bytes == 0 ? kDefault : static_cast<uint64_t>(bytes);
}

// Fields sandcell will map but does not yet: refused rather than ignored.
void refuse_not_yet(const json& host) {
  for (const char* field : {"CpusetCpus", "CpusetMems", "BlkioWeight", "MemoryReservation",
                            "KernelMemory", "PortBindings", "PublishAllPorts", "ExtraHosts", "Dns",
                            "DnsSearch", "DnsOptions", "GroupAdd"})
    if (is_set(host, field))
      throw bad_request("HostConfig." + std::string(field) + " is not supported by sandcell's Docker API yet");
  if (host.contains("RestartPolicy") && host["RestartPolicy"].is_object()) {
    std::string name = host["RestartPolicy"].value("Name", "");
    if (!name.empty() && name != "no")
      throw bad_request("HostConfig.RestartPolicy " + name + " is not supported by sandcell's Docker API yet");
  }
}

std::string network_mode(const json& host, bool allow_host_network) {
  std::string mode = host.value("NetworkMode", "");
  if (mode.empty() || mode == "default" || mode == "bridge") return "bridge";
  if (mode == "none") return "none";
  if (mode == "host" && allow_host_network) return "host";
  if (mode == "host")
    throw bad_request("HostConfig.NetworkMode host is refused by sandcell: untrusted code gets no host network "
                      "(the server allows it with --docker-allow-host-network)");
  throw bad_request("HostConfig.NetworkMode " + mode + " is not supported (none, bridge, host)");
}

// The label `sandcell.net=allow:HOST[,HOST...]`: sandcell's allowlist policy (`sandcell run --net
// allow:`) instead of bridge's NAT. Only on a bridge container: with NetworkMode none or host, or
// NetworkDisabled, the two would contradict each other (400, not a silent precedence). Returns
// the canonical entries ("pypi.org", "*.example.org:443"); none without the label.
std::vector<std::string> allowlist_label(const json& labels, const std::string& mode) {
  if (!labels.is_object() || !labels.contains(kNetworkLabel)) return {};
  const json& value = labels[kNetworkLabel];
  std::string text = value.is_string() ? value.get<std::string>() : value.dump();
  const std::string what = std::string("Config.Labels ") + kNetworkLabel + "=" + text.substr(0, 200);
  if (!text.starts_with("allow:"))
    throw bad_request(what + ": expected allow:HOST[,HOST...] (sandcell's allowlist policy)");
  if (mode != "bridge")
    throw bad_request(what + " conflicts with NetworkMode " + mode + ": the allowlist policy is for bridge containers");
  std::vector<std::string> entries;
  try {
    entries = network::Allowlist::parse(text).entries();
  } catch (const Error& e) {
    throw bad_request(what + ": " + e.what());
  }
  if (entries.empty()) throw bad_request(what + ": no hosts (allow:HOST[,HOST...], e.g. allow:pypi.org,files.pythonhosted.org)");
  return entries;
}

json checked_limits(const json& host) {
  json out = json::object();
  int64_t memory = host.value("Memory", int64_t{0});
  int64_t swap = host.value("MemorySwap", int64_t{0});
  if (memory < 0) throw bad_request("HostConfig.Memory must not be negative");
  if (memory > 0 && memory < (6 << 20)) throw bad_request("Minimum memory limit allowed is 6MB");
  if (memory > 0) out["Memory"] = memory;
  if (swap != 0 && swap != -1 && swap != memory)
    throw bad_request("HostConfig.MemorySwap: sandcell runs without swap (give 0, -1 or the same as Memory)");
  int64_t nano = host.value("NanoCpus", int64_t{0});
  int64_t quota = host.value("CpuQuota", int64_t{0}), period = host.value("CpuPeriod", int64_t{0});
  if (nano < 0 || quota < 0 || period < 0) throw bad_request("HostConfig CPU limits must not be negative");
  if (nano > 0 && quota > 0) throw bad_request("Conflicting options: Nano CPUs and CPU Period cannot both be set");
  if (nano > 0) out["NanoCpus"] = nano;
  if (quota > 0) out["NanoCpus"] = quota * 1000000000LL / (period > 0 ? period : 100000);
  // Docker's bounds (the kernel's v1 ones): 0 is "not set"; others are refused rather than clamped.
  int64_t shares = host.value("CpuShares", int64_t{0});
  if (shares != 0 && (shares < 2 || shares > 262144))
    throw bad_request("HostConfig.CpuShares " + std::to_string(shares) +
                      " is out of range (2 to 262144, 0: the default)");
  if (shares > 0) out["CpuShares"] = shares;
  int64_t pids = host.value("PidsLimit", int64_t{0});
  if (pids > 0) out["PidsLimit"] = pids;
  return out;
}

// HostConfig.Ulimits [{"Name": "nofile", "Soft": 512, "Hard": 1024}]: Docker's names (getrlimit's
// without RLIMIT_, lower case), each once, 0 <= Soft <= Hard (-1: unlimited). Stored as given;
// over this host's own hard limit the sandbox gets the host's, and its record says so.
// "nofile" → RLIMIT_NOFILE; nullopt for a name that is not one of them in lower case.
std::optional<int> ulimit_resource(const std::string& name) {
  std::string upper = "RLIMIT_";
  for (unsigned char c : name) {
    if (!std::islower(c)) return std::nullopt;
    upper += static_cast<char>(std::toupper(c));
  }
  return runtime::rlimit_resource(upper);
}

json checked_ulimits(const json& host) {
  json out = json::array();
  if (!is_set(host, "Ulimits")) return out;
  if (!host["Ulimits"].is_array()) throw bad_request("HostConfig.Ulimits must be an array");
  std::set<std::string> seen;
  for (const json& entry : host["Ulimits"]) {
    if (!entry.is_object() || !entry.contains("Name") || !entry["Name"].is_string())
      throw bad_request("HostConfig.Ulimits: each entry needs a Name (a string)");
    const std::string name = entry["Name"].get<std::string>();
    if (!ulimit_resource(name)) throw bad_request("HostConfig.Ulimits: invalid ulimit type: " + name);
    if (!seen.insert(name).second) throw bad_request("HostConfig.Ulimits: " + name + " is given twice");
    auto bound = [&](const char* field) -> int64_t {
      if (!entry.contains(field) || !entry[field].is_number_integer() || entry[field].get<int64_t>() < -1)
        throw bad_request("HostConfig.Ulimits " + name + ": " + field + " must be an integer >= -1 (-1: unlimited)");
      return entry[field].get<int64_t>();
    };
    const int64_t soft = bound("Soft"), hard = bound("Hard");
    if (hard != -1 && (soft == -1 || soft > hard))
      throw bad_request("HostConfig.Ulimits " + name + ": the soft limit " + std::to_string(soft) +
                        " is above the hard limit " + std::to_string(hard));
    out.push_back({{"Name", name}, {"Soft", soft}, {"Hard", hard}});
  }
  return out;
}

// The stored Ulimits over the default spec's rlimits (nofile 1024, core 0, memlock 0): a given
// resource replaces the default's entry.
void apply_ulimits(const json& ulimits, runtime::Spec& spec) {
  auto value = [](const json& v) { return v.get<int64_t>() == -1 ? RLIM_INFINITY : v.get<uint64_t>(); };
  for (const json& entry : ulimits) {
    const int resource = *ulimit_resource(entry["Name"].get<std::string>());
    std::erase_if(spec.rlimits, [&](const runtime::Rlimit& r) { return r.resource == resource; });
    spec.rlimits.push_back({.resource = resource, .soft = value(entry["Soft"]), .hard = value(entry["Hard"])});
  }
}

// HostConfig.StorageOpt: only "size" (Docker's overlay2 with pquota; here the size of the
// container's own filesystem). Stored as the bound in bytes, the server's default when not given.
json checked_storage(const json& host, const DiskBounds& disk) {
  uint64_t bytes = disk.default_bytes;
  if (is_set(host, "StorageOpt")) {
    if (!host["StorageOpt"].is_object()) throw bad_request("HostConfig.StorageOpt must be an object");
    for (const auto& [key, value] : host["StorageOpt"].items()) {
      if (key != "size")
        throw bad_request("HostConfig.StorageOpt " + key + " is not supported by sandcell (only size)");
      bytes = checked_disk_size("HostConfig.StorageOpt size", value, disk);
    }
  }
  return {{"size", std::to_string(bytes)}};
}

json checked_config(const json& body, const std::string& image) {
  json config = json::object();
  for (const char* key : {"Cmd", "Entrypoint", "Env"}) {
    if (!is_set(body, key)) continue;
    const json& value = body[key];
    if (value.is_string() && std::string(key) != "Env") {
      config[key] = json::array({"/bin/sh", "-c", value});
      continue;
    }
    if (!value.is_array() || !std::all_of(value.begin(), value.end(), [](const json& v) { return v.is_string(); }))
      throw bad_request("Config." + std::string(key) + " must be a list of strings");
    config[key] = value;
  }
  for (const char* key : {"WorkingDir", "User", "Hostname", "StopSignal"})
    if (body.contains(key) && !body[key].is_null() && !body[key].is_string())
      throw bad_request("Config." + std::string(key) + " must be a string");
  config["Image"] = image;
  config["WorkingDir"] = body.value("WorkingDir", "");
  config["User"] = body.value("User", "");
  config["Hostname"] = body.value("Hostname", "");
  config["OpenStdin"] = body.value("OpenStdin", false);
  config["StdinOnce"] = body.value("StdinOnce", false);
  config["AttachStdin"] = body.value("AttachStdin", false);
  config["AttachStdout"] = body.value("AttachStdout", false);
  config["AttachStderr"] = body.value("AttachStderr", false);
  if (body.contains("Tty") && !body["Tty"].is_null() && !body["Tty"].is_boolean())
    throw bad_request("Config.Tty must be a boolean");
  config["Tty"] = body.value("Tty", false);
  config["Labels"] = body.contains("Labels") && body["Labels"].is_object() ? body["Labels"] : json::object();
  std::string stop = body.value("StopSignal", "");
  if (!stop.empty()) {
    try {
      oci::parse_signal(stop);
    } catch (const Error& e) {
      throw bad_request("Config.StopSignal: " + std::string(e.what()));
    }
  }
  config["StopSignal"] = stop;
  if (body.contains("StopTimeout") && body["StopTimeout"].is_number_integer()) config["StopTimeout"] = body["StopTimeout"];
  return config;
}

}  // namespace

std::optional<TerminalSize> console_size(const json& object, const std::string& field) {
  if (!object.contains("ConsoleSize") || object["ConsoleSize"].is_null()) return std::nullopt;
  const json& value = object["ConsoleSize"];
  if (!value.is_array() || value.size() != 2 || !value[0].is_number_integer() || !value[1].is_number_integer())
    throw bad_request(field + " must be [height, width]");
  TerminalSize size;
  if (!terminal_size_in_range(value[0].get<int64_t>(), value[1].get<int64_t>(), size))
    throw bad_request(field + " must be [height, width], each from 0 to 65535");
  return size.rows == 0 && size.columns == 0 ? std::nullopt : std::optional<TerminalSize>(size);
}

bool terminal_size_in_range(int64_t rows, int64_t columns, TerminalSize& size) {
  if (rows < 0 || columns < 0 || rows > 65535 || columns > 65535) return false;
  size = {static_cast<uint16_t>(rows), static_cast<uint16_t>(columns)};
  return true;
}

void check_container_name(const std::string& name) {
  static const std::regex kName("[a-zA-Z0-9][a-zA-Z0-9_.-]{0,127}");
  if (!std::regex_match(name, kName))
    throw bad_request("Invalid container name (" + name + "), only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed");
}

uint64_t checked_disk_size(const std::string& field, const json& value, const DiskBounds& disk) {
  if (!value.is_string()) throw bad_request(field + " must be a string");
  uint64_t bytes = 0;
  try {
    bytes = runtime::parse_size(value.get<std::string>(), field);
  } catch (const Error& e) {
    throw bad_request(e.what());
  }
  if (bytes < kMinDiskBytes) throw bad_request(field + " " + value.get<std::string>() + " is too small (at least 8m)");
  if (std::optional<std::string> why = WorkspaceDisk::unavailable())
    throw bad_request(field + " cannot be enforced on this host: " + *why);
  if (disk.max_bytes && bytes > *disk.max_bytes)
    throw bad_request(field + " " + value.get<std::string>() + " is over the server's --max-disk (" +
                      std::to_string(*disk.max_bytes) + " bytes)");
  return bytes;
}

json check_create_request(const std::string& body_text, const std::string& name,
                          const rootfs_builder::ImageStore& images, const VolumeStore& volumes,
                          const DiskBounds& disk, const LogBounds& log, const NetworkOptions& network) {
  if (!name.empty()) check_container_name(name);
  json body;
  try {
    body = parse_bounded_json(body_text);
  } catch (const std::exception& e) {
    throw bad_request(std::string("invalid JSON body: ") + e.what());
  }
  if (!body.is_object()) throw bad_request("the request body must be a JSON object");
  json host = body.contains("HostConfig") && !body["HostConfig"].is_null() ? body["HostConfig"] : json::object();
  if (!host.is_object()) throw bad_request("HostConfig must be an object");
  std::string image = body.value("Image", "");
  if (image.empty()) throw bad_request("Config.Image is required");
  try {
    refuse_weakening(host);
    refuse_not_yet(host);
    json stored_host = checked_limits(host);
    // docker-py's network_disabled=True: Config.NetworkDisabled, whatever HostConfig says.
    stored_host["NetworkMode"] = body.value("NetworkDisabled", false) ? "none" : network_mode(host, network.allow_host);
    if (std::vector<std::string> allow = allowlist_label(body.value("Labels", json()), stored_host["NetworkMode"]); !allow.empty())
      stored_host[kNetworkAllowKey] = allow;
    stored_host["AutoRemove"] = host.value("AutoRemove", false);
    if (std::optional<TerminalSize> size = console_size(host, "HostConfig.ConsoleSize"))
      stored_host["ConsoleSize"] = {size->rows, size->columns};
    stored_host["StorageOpt"] = checked_storage(host, disk);
    if (json options = checked_security_opt(host); !options.empty())
      stored_host["SecurityOpt"] = options;
    if (host.contains("ReadonlyRootfs") && !host["ReadonlyRootfs"].is_null() &&
        !host["ReadonlyRootfs"].is_boolean())
      throw bad_request("HostConfig.ReadonlyRootfs must be a boolean");
    stored_host["ReadonlyRootfs"] = host.value("ReadonlyRootfs", false);
    stored_host["ShmSize"] = checked_shm_size(host);
    if (json ulimits = checked_ulimits(host); !ulimits.empty()) stored_host["Ulimits"] = ulimits;
    stored_host["LogConfig"] = checked_log_config(host, log);
    json request = {{"Name", name}, {"Image", image}, {"Config", checked_config(body, image)}, {"HostConfig", stored_host}};
    rootfs_builder::ImageRecord record;
    try {
      record = images.resolve(image);
    } catch (const Error&) {
      throw not_found("No such image: " + image);
    }
    request["ImageID"] = record.manifest.config.digest;
    uint64_t memory = stored_host.value("Memory", runtime::default_limits().memory_bytes.value_or(0));
    json mounts = checked_mounts(host, body.value("Volumes", json()), memory);
    create_volumes(mounts, volumes, disk.default_bytes);
    request["HostConfig"]["Mounts"] = mounts;
    return request;
  } catch (const json::exception& e) {
    throw bad_request(std::string("wrong type in the request: ") + e.what());
  }
}

runtime::Spec spec_for_container(const json& request, rootfs_builder::ImageStore& images,
                                 const std::string& container_dir) {
  runtime::Spec spec = runtime::default_spec();
  const json& config = request["Config"];
  const json& host = request["HostConfig"];
  std::vector<std::string> cmd = config.value("Cmd", std::vector<std::string>{});
  rootfs_builder::ImageRunRequest run{.command = cmd, .user = std::nullopt, .workdir = std::nullopt};
  if (!config.value("User", "").empty()) run.user = config["User"].get<std::string>();
  if (!config.value("WorkingDir", "").empty()) run.workdir = config["WorkingDir"].get<std::string>();
  rootfs_builder::ImageRecord record = images.resolve(request["ImageID"].get<std::string>());
  rootfs_builder::apply_resolved_image(images, request["Image"].get<std::string>(), record, run, spec);
  if (config.contains("Entrypoint")) {  // Docker: a given Entrypoint drops the image's Cmd too
    spec.args = config["Entrypoint"].get<std::vector<std::string>>();
    spec.args.insert(spec.args.end(), cmd.begin(), cmd.end());
  }
  for (const std::string& kv : config.value("Env", std::vector<std::string>{})) {
    std::string key = kv.substr(0, kv.find('=') + 1);
    std::erase_if(spec.env, [&](const std::string& e) { return e.rfind(key, 0) == 0; });
    spec.env.push_back(kv);
  }
  std::string id = request.value("Id", "");
  spec.hostname = config.value("Hostname", "").empty() ? id.substr(0, 12) : config["Hostname"].get<std::string>();
  spec.limits.wall_s.reset();        // a container lives until it is stopped
  spec.limits.output_bytes.reset();  // its output goes to the log on disk
  if (host.contains("Memory")) spec.limits.memory_bytes = host["Memory"].get<uint64_t>();
  if (host.contains("NanoCpus")) spec.limits.cpus = host["NanoCpus"].get<double>() / 1e9;
  if (host.contains("PidsLimit")) spec.limits.pids = host["PidsLimit"].get<uint64_t>();
  if (host.contains("CpuShares")) spec.limits.cpu_shares = host["CpuShares"].get<uint64_t>();
  // A Docker container writes anywhere in its own root, as a build step does: that is its layer,
  // on its own disk. --read-only: the root mount itself is read-only (EROFS), and Landlock allows
  // writes only to /dev/shm besides the mounts Docker keeps writable (tmpfs, volumes;
  // plan_landlock adds those).
  spec.writable_paths = {"/"};
  if (host.value("ReadonlyRootfs", false)) {
    spec.rootfs_read_only = true;
    spec.writable_paths = {"/dev/shm"};
  }
  if (host.contains("ShmSize")) spec.shm_bytes = host["ShmSize"].get<uint64_t>();
  for (const json& option : host.value("SecurityOpt", json::array())) {
    const std::string text = option.get<std::string>();
    if (text.starts_with("seccomp=") || text.starts_with("seccomp:"))
      spec.seccomp_layers.push_back(compile_seccomp_layer(text.substr(8)));
  }
  apply_ulimits(host.value("Ulimits", json::array()), spec);
  spec.network = network_of(host);
  if (spec.network == runtime::NetworkMode::Allow)
    spec.network_policy.allow = host[kNetworkAllowKey].get<std::vector<std::string>>();
  apply_mounts(host.value("Mounts", json::array()), VolumeStore(images.root() + "/docker/volumes"), spec);
  const std::string layer_dir = disk_bytes_of(request) ? container_dir + "/disk" : container_dir;
  spec.rootfs_upper_dir = layer_dir + "/upper";
  spec.rootfs_work_dir = layer_dir + "/work";
  return spec;
}

runtime::NetworkMode network_of(const json& host) {
  std::string mode = host.value("NetworkMode", "none");
  if (mode == "host") return runtime::NetworkMode::Host;
  if (mode == "none") return runtime::NetworkMode::None;
  return host.contains(kNetworkAllowKey) ? runtime::NetworkMode::Allow : runtime::NetworkMode::Full;
}

void check_network_allowed(const json& request, const NetworkOptions& network) {
  if (network_of(request["HostConfig"]) == runtime::NetworkMode::Host && !network.allow_host)
    throw bad_request("HostConfig.NetworkMode host is refused by sandcell: this server was not started with "
                      "--docker-allow-host-network");
}

std::optional<uint64_t> disk_bytes_of(const json& request) {
  const json& host = request["HostConfig"];
  if (!host.contains("StorageOpt") || !host["StorageOpt"].contains("size")) return std::nullopt;
  return runtime::parse_size(host["StorageOpt"]["size"].get<std::string>(), "StorageOpt size");
}

runtime::SeccompSource container_seccomp(bool report_denials) {
  return seccomp::cached_profile("default", {}, {.report_denials = report_denials});
}

}  // namespace sandcell::dockerapi
