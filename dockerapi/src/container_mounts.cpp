// HostConfig.Binds / Mounts / Tmpfs → the stored mount list → Spec (container_mounts.hpp).
#include "container_mounts.hpp"

#include <set>
#include <sstream>

#include "api_error.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::dockerapi {
namespace {

using nlohmann::json;

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string part; std::getline(in, part, separator);) out.push_back(part);
  return out;
}

// A mount target as the runtime takes it: absolute, no "." or "..", not the root, and not on the
// kernel's file systems (the sandbox's own /proc, /sys and /dev are mounted over them later).
std::string checked_target(const std::string& field, std::string target) {
  while (target.size() > 1 && target.back() == '/') target.pop_back();
  if (target.empty() || target[0] != '/') throw bad_request(field + ": the mount target must be an absolute path, not '" + target + "'");
  for (const std::string& part : split(target, '/'))
    if (part == "." || part == "..") throw bad_request(field + ": the mount target must not contain '.' or '..': '" + target + "'");
  if (target == "/") throw bad_request(field + ": invalid mount config: destination can't be '/'");
  for (const char* kernel : {"/proc", "/sys", "/dev"})
    if (target == kernel || target.starts_with(std::string(kernel) + "/"))
      throw bad_request(field + ": sandcell does not mount over " + std::string(kernel) + " (" + target + ")");
  return target;
}

ApiError host_path_refused(const std::string& field, const std::string& source, const std::string& target) {
  return bad_request(field + " " + source + ": host paths are not mounted by sandcell's Docker API (a sandboxed "
                     "program would read and write the host's files); use a named volume (NAME:" + target + ")");
}

json volume_mount(const std::string& field, const std::string& source, const std::string& target, bool read_only) {
  if (source.starts_with("/") || source.starts_with(".")) throw host_path_refused(field, source, target);
  if (!source.empty()) VolumeStore::check_name(source);
  return {{"Type", "volume"}, {"Source", source}, {"Target", checked_target(field, target)}, {"ReadOnly", read_only}};
}

// `name:/path[:ro|rw,nocopy,...]`. SELinux relabelling (z, Z) has nothing to relabel here; a
// propagation other than private would let mounts travel between the sandbox and the host.
json bind_entry(const std::string& bind) {
  std::vector<std::string> parts = split(bind, ':');
  if (parts.size() < 2 || parts.size() > 3) throw bad_request("HostConfig.Binds " + bind + ": expected NAME:/path[:options]");
  bool read_only = false;
  for (const std::string& option : parts.size() == 3 ? split(parts[2], ',') : std::vector<std::string>{}) {
    if (option == "ro" || option == "rw") read_only = option == "ro";
    else if (option != "nocopy" && option != "z" && option != "Z" && option != "private" && option != "rprivate")
      throw bad_request("HostConfig.Binds " + bind + ": option " + option + " is not supported by sandcell");
  }
  return volume_mount("HostConfig.Binds", parts[0], parts[1], read_only);
}

uint64_t tmpfs_size(const std::string& field, const std::string& text) {
  try {
    return runtime::parse_size(text, field + " size");
  } catch (const Error& e) {
    throw bad_request(e.what());
  }
}

mode_t tmpfs_mode(const std::string& field, const std::string& octal) {
  size_t used = 0;
  unsigned long mode = 0;
  try {
    mode = std::stoul(octal, &used, 8);
  } catch (const std::exception&) {
  }
  if (octal.empty() || used != octal.size() || mode > 07777) throw bad_request(field + ": mode must be octal, at most 7777: '" + octal + "'");
  return static_cast<mode_t>(mode);
}

// Always nosuid,nodev: `suid` or `dev` would let a sandbox make setuid or device files.
json tmpfs_entry(const std::string& target, const std::string& options, uint64_t memory_limit) {
  const std::string field = "HostConfig.Tmpfs " + target;
  json entry = {{"Type", "tmpfs"}, {"Target", checked_target(field, target)}, {"SizeBytes", memory_limit},
                {"Mode", 01777}, {"ReadOnly", false}, {"NoExec", false}};
  for (const std::string& option : split(options, ',')) {
    std::string key = option.substr(0, option.find('=')), value = option.substr(std::min(option.size(), key.size() + 1));
    if (option.empty() || option == "nosuid" || option == "nodev" || option == "rw") continue;
    if (option == "ro") entry["ReadOnly"] = true;
    else if (option == "noexec" || option == "exec") entry["NoExec"] = option == "noexec";
    else if (key == "size") entry["SizeBytes"] = tmpfs_size(field, value);
    else if (key == "mode") entry["Mode"] = tmpfs_mode(field, value);
    else if (option == "suid" || option == "dev")
      throw bad_request(field + ": " + option + " is refused by sandcell: it would weaken the sandbox");
    else throw bad_request(field + ": option " + option + " is not supported by sandcell (size, mode, ro, noexec)");
  }
  return entry;
}

json mounts_entry(const json& m, uint64_t memory_limit) {
  if (!m.is_object()) throw bad_request("HostConfig.Mounts: each entry must be an object");
  std::string type = m.value("Type", "");
  std::string target = m.value("Target", "");
  const std::string field = "HostConfig.Mounts " + target;
  if (type == "bind") throw host_path_refused(field, m.value("Source", ""), target);
  if (m.contains("BindOptions") && !m["BindOptions"].is_null()) throw bad_request(field + ": BindOptions is only for type bind");
  if (type == "volume") {
    if (m.contains("TmpfsOptions") && !m["TmpfsOptions"].is_null()) throw bad_request(field + ": TmpfsOptions is only for type tmpfs");
    json driver = m.value("VolumeOptions", json::object()).value("DriverConfig", json::object());
    if (driver.is_object() && (!driver.value("Name", "").empty() && driver.value("Name", "") != "local"))
      throw bad_request(field + ": volume drivers other than local are not supported by sandcell");
    if (driver.is_object() && driver.contains("Options") && !driver["Options"].empty())
      throw bad_request(field + ": volume driver options are refused by sandcell (they mount host devices and paths)");
    return volume_mount(field, m.value("Source", ""), target, m.value("ReadOnly", false));
  }
  if (type == "tmpfs") {
    if (m.contains("VolumeOptions") && !m["VolumeOptions"].is_null()) throw bad_request(field + ": VolumeOptions is only for type volume");
    json entry = tmpfs_entry(target, m.value("ReadOnly", false) ? "ro" : "", memory_limit);
    json options = m.value("TmpfsOptions", json::object());
    if (!options.is_object()) throw bad_request(field + ": TmpfsOptions must be an object");
    if (options.value("SizeBytes", int64_t{0}) < 0) throw bad_request(field + ": TmpfsOptions.SizeBytes must not be negative");
    if (options.value("SizeBytes", int64_t{0}) > 0) entry["SizeBytes"] = options["SizeBytes"];
    if (options.value("Mode", 0) != 0) {
      int mode = options["Mode"].get<int>();
      if (mode < 0 || mode > 07777) throw bad_request(field + ": TmpfsOptions.Mode must be a file mode (at most 07777)");
      entry["Mode"] = mode;
    }
    return entry;
  }
  throw bad_request(field + ": mount type '" + type + "' is not supported by sandcell (volume, tmpfs)");
}

}  // namespace

json checked_mounts(const json& host, const json& config_volumes, uint64_t memory_limit) {
  json out = json::array();
  json binds = host.value("Binds", json::array()), mounts = host.value("Mounts", json::array()),
       tmpfs = host.value("Tmpfs", json::object());
  if (binds.is_null()) binds = json::array();
  if (mounts.is_null()) mounts = json::array();
  if (tmpfs.is_null()) tmpfs = json::object();
  if (!binds.is_array() || !mounts.is_array() || !tmpfs.is_object())
    throw bad_request("HostConfig.Binds and Mounts must be lists, Tmpfs an object");
  for (const json& bind : binds) {
    if (!bind.is_string()) throw bad_request("HostConfig.Binds must be a list of strings");
    out.push_back(bind_entry(bind.get<std::string>()));
  }
  for (const json& m : mounts) out.push_back(mounts_entry(m, memory_limit));
  for (auto& [target, options] : tmpfs.items()) {
    if (!options.is_string()) throw bad_request("HostConfig.Tmpfs " + target + ": the options must be a string");
    out.push_back(tmpfs_entry(target, options.get<std::string>(), memory_limit));
  }
  std::set<std::string> targets;
  for (const json& m : out)
    if (!targets.insert(m["Target"].get<std::string>()).second)
      throw bad_request("Duplicate mount point: " + m["Target"].get<std::string>());
  if (config_volumes.is_null()) return out;
  if (!config_volumes.is_object()) throw bad_request("Config.Volumes must be an object");
  for (auto& [path, ignored] : config_volumes.items()) {
    json anonymous = volume_mount("Config.Volumes", "", path, false);
    if (targets.insert(anonymous["Target"].get<std::string>()).second) out.push_back(anonymous);
  }
  return out;
}

void create_volumes(json& mounts, const VolumeStore& volumes, uint64_t default_bytes) {
  for (json& m : mounts)
    if (m["Type"] == "volume") m["Source"] = volumes.create(m["Source"].get<std::string>(), default_bytes).name;
}

void apply_mounts(const json& mounts, const VolumeStore& volumes, runtime::Spec& spec) {
  for (const json& m : mounts) {
    if (m["Type"] == "tmpfs") {
      spec.tmpfs_mounts.push_back({.destination = m["Target"],
                                   .size_bytes = m["SizeBytes"],
                                   .mode = m["Mode"].get<mode_t>(),
                                   .read_only = m["ReadOnly"],
                                   .no_exec = m["NoExec"]});
      continue;
    }
    std::optional<Volume> volume = volumes.find(m["Source"]);
    if (!volume) throw Error::invalid("volume " + m["Source"].get<std::string>() + " was removed");
    spec.bind_mounts.push_back({.source = volume->data_dir, .destination = m["Target"], .read_only = m["ReadOnly"], .idmap = false});
  }
}

json inspect_mounts(const json& mounts, const VolumeStore& volumes) {
  json out = json::array();
  for (const json& m : mounts) {
    bool volume = m["Type"] == "volume";
    std::optional<Volume> found = volume ? volumes.find(m["Source"]) : std::nullopt;
    json entry = {{"Type", m["Type"]}, {"Source", found ? found->data_dir : ""}, {"Destination", m["Target"]},
                  {"Mode", ""}, {"RW", !m.value("ReadOnly", false)}, {"Propagation", ""}};
    if (volume) entry["Name"] = m["Source"], entry["Driver"] = "local";
    out.push_back(entry);
  }
  return out;
}

std::vector<std::string> volume_users(const ContainerStore& containers, const std::string& name) {
  std::vector<std::string> users;
  for (const ContainerDir& container : containers.list()) {
    try {
      for (const json& m : container.create_request()["HostConfig"].value("Mounts", json::array()))
        if (m.value("Type", "") == "volume" && m.value("Source", "") == name) {
          users.push_back(container.id());
          break;
        }
    } catch (const Error&) {  // removed meanwhile
    } catch (const json::exception&) {
    }
  }
  return users;
}

void remove_anonymous_volumes(const json& mounts, const VolumeStore& volumes, const ContainerStore& containers) {
  for (const json& m : mounts) {
    if (m.value("Type", "") != "volume") continue;
    std::optional<Volume> volume = volumes.find(m.value("Source", ""));
    if (!volume || !volume->anonymous || !volume_users(containers, volume->name).empty()) continue;
    try {
      volumes.remove(volume->name);
    } catch (const ApiError&) {  // in use after all
    }
  }
}

}  // namespace sandcell::dockerapi
