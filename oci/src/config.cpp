// config.json → Config: the top level, root, mounts and hooks; process and linux have their
// own files.
#include "sandcell/oci/config.hpp"

#include <sys/mount.h>

#include <fstream>

#include "config_parts.hpp"
#include "json_fields.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/bounded_json.hpp"

namespace sandcell::oci {
namespace {

using nlohmann::json;
namespace f = fields;

std::string absolute_in(const std::string& base, const std::string& path) {
  return !path.empty() && path[0] == '/' ? path : base + "/" + path;
}

Hook parse_hook(const json& value, const std::string& path) {
  f::object(value, path);
  Hook hook;
  const json* p = f::find(value, "path");
  if (p == nullptr) throw Error::invalid(path + ".path: missing");
  hook.path = f::text(*p, path + ".path");
  if (hook.path.empty() || hook.path[0] != '/') throw Error::invalid(path + ".path: must be absolute");
  if (const json* v = f::find(value, "args")) hook.args = f::texts(*v, path + ".args");
  if (const json* v = f::find(value, "env")) hook.env = f::texts(*v, path + ".env");
  if (const json* v = f::find(value, "timeout")) {
    int64_t timeout = f::integer(*v, path + ".timeout");
    if (timeout <= 0) throw Error::invalid(path + ".timeout: must be positive");
    hook.timeout_s = static_cast<int>(timeout);
  }
  return hook;
}

void parse_root(const json& root, const std::string& bundle, runtime::Container& c) {
  f::object(root, "root");
  const json* path = f::find(root, "path");
  if (path == nullptr) throw Error::invalid("root.path: missing");
  c.rootfs = absolute_in(bundle, f::text(*path, "root.path"));
  if (const json* v = f::find(root, "readonly")) c.rootfs_readonly = f::boolean(*v, "root.readonly");
}

}  // namespace

runtime::ContainerMount mount_from_options(const std::vector<std::string>& options) {
  struct Flag {
    const char* name;
    unsigned long set, clear;
  };
  static const Flag kFlags[] = {
      {"ro", MS_RDONLY, 0}, {"rw", 0, MS_RDONLY}, {"nosuid", MS_NOSUID, 0}, {"suid", 0, MS_NOSUID},
      {"nodev", MS_NODEV, 0}, {"dev", 0, MS_NODEV}, {"noexec", MS_NOEXEC, 0}, {"exec", 0, MS_NOEXEC},
      {"sync", MS_SYNCHRONOUS, 0}, {"async", 0, MS_SYNCHRONOUS}, {"dirsync", MS_DIRSYNC, 0},
      {"remount", MS_REMOUNT, 0}, {"mand", MS_MANDLOCK, 0}, {"nomand", 0, MS_MANDLOCK},
      {"atime", 0, MS_NOATIME}, {"noatime", MS_NOATIME, 0}, {"diratime", 0, MS_NODIRATIME},
      {"nodiratime", MS_NODIRATIME, 0}, {"relatime", MS_RELATIME, 0}, {"norelatime", 0, MS_RELATIME},
      {"strictatime", MS_STRICTATIME, 0}, {"nostrictatime", 0, MS_STRICTATIME},
      {"bind", MS_BIND, 0}, {"rbind", MS_BIND | MS_REC, 0},
      // The rest of the runtime-spec's MUST list (config.md, Linux mount options), as mount(8).
      {"defaults", 0, 0}, {"iversion", MS_I_VERSION, 0}, {"noiversion", 0, MS_I_VERSION},
      {"lazytime", MS_LAZYTIME, 0}, {"nolazytime", 0, MS_LAZYTIME}, {"silent", MS_SILENT, 0},
      {"loud", 0, MS_SILENT}};
  static const Flag kPropagation[] = {
      {"private", MS_PRIVATE, 0}, {"rprivate", MS_PRIVATE | MS_REC, 0}, {"shared", MS_SHARED, 0},
      {"rshared", MS_SHARED | MS_REC, 0}, {"slave", MS_SLAVE, 0}, {"rslave", MS_SLAVE | MS_REC, 0},
      {"unbindable", MS_UNBINDABLE, 0}, {"runbindable", MS_UNBINDABLE | MS_REC, 0}};
  // runc's own extensions that are not mount(2) options; SELinux relabelling has no meaning here.
  static const char* kIgnored[] = {"tmpcopyup", "notmpcopyup", "copy-symlink", "nocopyup", "z", "Z"};
  runtime::ContainerMount mount;
  for (const std::string& option : options) {
    bool known = false;
    for (const Flag& flag : kFlags)
      if (option == flag.name) {
        mount.flags = (mount.flags & ~flag.clear) | flag.set;
        known = true;
      }
    for (const Flag& flag : kPropagation)
      if (option == flag.name) {
        mount.propagation = flag.set;
        known = true;
      }
    for (const char* ignored : kIgnored) known |= option == ignored;
    if (!known) mount.data += (mount.data.empty() ? "" : ",") + option;
  }
  return mount;
}

std::vector<runtime::ContainerMount> parse_mounts(const json& mounts, const std::string& bundle) {
  std::vector<runtime::ContainerMount> out;
  f::array(mounts, "mounts");
  for (size_t i = 0; i < mounts.size(); ++i) {
    std::string path = "mounts[" + std::to_string(i) + "]";
    const json& m = f::object(mounts[i], path);
    std::vector<std::string> options;
    if (const json* v = f::find(m, "options")) options = f::texts(*v, path + ".options");
    runtime::ContainerMount mount = mount_from_options(options);
    const json* destination = f::find(m, "destination");
    if (destination == nullptr) throw Error::invalid(path + ".destination: missing");
    mount.destination = f::text(*destination, path + ".destination");
    if (mount.destination.empty()) throw Error::invalid(path + ".destination: empty");
    // The runtime-spec (config.md, Mounts): a relative destination is deprecated but MUST be
    // taken as relative to "/".
    if (mount.destination[0] != '/') mount.destination = "/" + mount.destination;
    if (const json* v = f::find(m, "type")) mount.type = f::text(*v, path + ".type");
    if (const json* v = f::find(m, "source")) mount.source = f::text(*v, path + ".source");
    if (mount.type == "bind") mount.flags |= MS_BIND;
    if (mount.flags & MS_BIND) mount.source = absolute_in(bundle, mount.source);
    if (!(mount.flags & MS_BIND) && mount.type.empty()) throw Error::invalid(path + ".type: missing");
    if (f::find(m, "uidMappings") || f::find(m, "gidMappings"))
      throw Error::invalid(path + ": idmapped mounts are not supported by sandcell-oci");
    out.push_back(mount);
  }
  return out;
}

Hooks parse_hooks(const json& hooks) {
  f::object(hooks, "hooks");
  Hooks out;
  std::pair<const char*, std::vector<Hook>*> kinds[] = {
      {"prestart", &out.prestart},           {"createRuntime", &out.create_runtime},
      {"createContainer", &out.create_container}, {"startContainer", &out.start_container},
      {"poststart", &out.poststart},         {"poststop", &out.poststop}};
  for (auto& [name, list] : kinds) {
    const json* v = f::find(hooks, name);
    if (v == nullptr) continue;
    f::array(*v, std::string("hooks.") + name);
    for (size_t i = 0; i < v->size(); ++i)
      list->push_back(parse_hook((*v)[i], std::string("hooks.") + name + "[" + std::to_string(i) + "]"));
  }
  return out;
}

Config parse_config(const json& config, const std::string& bundle) {
  f::object(config, "config.json");
  Config out;
  runtime::Spec& spec = out.spec;
  spec.container.emplace();
  spec.hostname.clear();
  spec.cwd = "/";
  spec.no_new_privileges = false;  // the spec's default
  spec.lsm = false;                // AppArmor only as process.apparmorProfile names it
  if (const json* v = f::find(config, "ociVersion")) out.oci_version = f::text(*v, "ociVersion");
  const json* root = f::find(config, "root");
  if (root == nullptr) throw Error::invalid("root: missing");
  parse_root(*root, bundle, *spec.container);
  const json* process = f::find(config, "process");
  if (process == nullptr) throw Error::invalid("process: missing (sandcell-oci runs a process)");
  apply_process(*process, spec);
  if (const json* v = f::find(config, "hostname")) spec.hostname = f::text(*v, "hostname");
  if (const json* v = f::find(config, "domainname")) spec.container->domainname = f::text(*v, "domainname");
  if (const json* v = f::find(config, "mounts")) spec.container->mounts = parse_mounts(*v, bundle);
  if (const json* v = f::find(config, "hooks")) out.hooks = parse_hooks(*v);
  if (const json* v = f::find(config, "annotations"))
    for (const auto& [key, value] : f::object(*v, "annotations").items()) {
      if (key.empty()) throw Error::invalid("annotations: a key must not be empty");
      out.annotations[key] = f::text(value, "annotations." + key);
    }
  if (const json* v = f::find(config, "linux")) {
    // The runtime-spec: with intelRdt set the runtime MUST put the container in a resctrl group,
    // and MUST fail where it cannot; sandcell-oci has no resctrl support.
    if (v->is_object() && f::find(*v, "intelRdt"))
      throw Error::invalid("linux.intelRdt: Intel RDT (resctrl) is not supported by sandcell-oci");
    // runtime-spec 1.2: the runtime MUST move each listed device into the container's network
    // namespace; ignored, the container would start without the device it was promised.
    if (v->is_object() && f::find(*v, "netDevices"))
      throw Error::invalid(
          "linux.netDevices: moving host network devices into the container is not supported by "
          "sandcell-oci");
    parse_linux(*v, spec);  // a relative namespace path is refused there (runtime-spec: MUST be absolute)
    if (const json* r = f::find(*v, "resources")) out.resources = *r;
  }
  return out;
}

Config load_config(const std::string& bundle) {
  std::ifstream in(bundle + "/config.json");
  if (!in) throw Error::invalid("cannot read " + bundle + "/config.json (is --bundle right?)");
  json config;
  try {
    config = parse_bounded_json(in);
  } catch (const json::parse_error& e) {
    throw Error::invalid(bundle + "/config.json: " + e.what());
  }
  return parse_config(config, bundle);
}

}  // namespace sandcell::oci
