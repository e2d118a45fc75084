#include "spec_checks.hpp"
#include "sandcell/base/rootless.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <sstream>

#include "sandcell/base/error.hpp"

namespace sandcell::runtime {

void check_sandbox_path(const std::string& path, const std::string& what) {
  if (path.empty() || path[0] != '/') throw Error::invalid(what + " must be an absolute path: '" + path + "'");
  std::istringstream parts(path);
  std::string part;
  while (std::getline(parts, part, '/'))
    if (part == "." || part == "..")
      throw Error::invalid(what + " must not contain '.' or '..': '" + path + "'");
}

// Every id the sandbox uses must be one its user namespace maps (0..65535).
static void check_userns_spec(const Spec& spec) {
  if (spec.user_namespace != UserNamespace::Auto) return;
  if (spec.container)
    throw Error::invalid(
        "UserNamespace::Auto is not for OCI containers (config.json has linux.uidMappings)");
  if (rootless())
    throw Error::invalid(
        "UserNamespace::Auto needs root (it maps host id ranges and idmaps the image layers); "
        "rootless sandcell already gives every sandbox a user namespace of its own");
  if (spec.network == NetworkMode::Host)
    throw Error::invalid("UserNamespace::Auto cannot share the host's network namespace");
  if (!spec.rootfs_upper_dir.empty())
    throw Error::invalid("UserNamespace::Auto does not keep a rootfs upper directory");
  std::vector<uint32_t> ids{spec.uid, spec.gid};
  ids.insert(ids.end(), spec.additional_gids.begin(), spec.additional_gids.end());
  for (uint32_t id : ids)
    if (id >= 65536)
      throw Error::invalid("UserNamespace::Auto maps ids 0-65535 only; the run asks for id " +
                           std::to_string(id));
}

void check_spec(const Spec& spec) {
  check_userns_spec(spec);
  if (spec.args.empty() || spec.args[0].empty()) throw Error::invalid("no command given to run");
  if (spec.rootfs_layers.empty()) throw Error::invalid("no rootfs given (Spec::rootfs_layers)");
  for (const std::string& layer : spec.rootfs_layers) {
    struct stat st {};
    if (stat(layer.c_str(), &st) < 0) throw Error::invalid("rootfs " + layer + " does not exist");
    if (!S_ISDIR(st.st_mode)) throw Error::invalid("rootfs " + layer + " is not a directory");
  }
  check_sandbox_path(spec.cwd, "working directory");
  if (spec.rootfs_upper_dir.empty() != spec.rootfs_work_dir.empty())
    throw Error::invalid("a persistent rootfs upper directory needs a work directory, and vice versa");
  if (spec.shm_bytes == 0)
    throw Error::invalid("Spec::shm_bytes must be above 0 (the size of /dev/shm)");
  for (const SeccompProgram& layer : spec.seccomp_layers)
    if (layer.notify || layer.instructions.empty() || layer.instructions.size() > BPF_MAXINSNS)
      throw Error::invalid("seccomp layer " + layer.name + ": needs 1 to " +
                           std::to_string(BPF_MAXINSNS) +
                           " instructions and plain actions (no notify)");
  if (spec.hostname.empty() || spec.hostname.size() > 64)
    throw Error::invalid("hostname must be 1 to 64 characters: '" + spec.hostname + "'");
  for (const std::string& entry : spec.env)
    if (entry.find('=') == std::string::npos || entry[0] == '=')
      throw Error::invalid("environment entry must be K=V: '" + entry + "'");
}

cap_value_t capability_from_name(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower.rfind("cap_", 0) != 0) lower = "cap_" + lower;
  cap_value_t value = 0;
  if (cap_from_name(lower.c_str(), &value) < 0)
    throw Error::invalid("unknown capability '" + name + "'");
  return value;
}

CapabilityPlan plan_capabilities(const std::vector<std::string>& keep, bool raise_ambient) {
  CapabilityPlan plan;
  for (const std::string& name : keep) plan.keep.push_back(capability_from_name(name));
  for (cap_value_t cap = 0; cap < static_cast<cap_value_t>(cap_max_bits()); ++cap)
    if (std::find(plan.keep.begin(), plan.keep.end(), cap) == plan.keep.end())
      plan.drop_from_bounding.push_back(cap);
  plan.final_state.reset(cap_init());  // all clear
  if (!plan.final_state) throw Error(errno, "cap_init");
  // Inheritable stays empty, as runc and Docker since CVE-2022-24769: an inheritable bit lets a
  // file with that inheritable file capability gain it across execve, even past a user switch.
  // Only an ambient capability needs it (PR_CAP_AMBIENT_RAISE requires inheritable and permitted).
  std::vector<cap_flag_t> flags = {CAP_EFFECTIVE, CAP_PERMITTED};
  if (raise_ambient) flags.push_back(CAP_INHERITABLE);
  for (cap_flag_t flag : flags)
    if (!plan.keep.empty() &&
        cap_set_flag(plan.final_state.get(), flag, static_cast<int>(plan.keep.size()), plan.keep.data(), CAP_SET) < 0)
      throw Error(errno, "cap_set_flag");
  return plan;
}

}  // namespace sandcell::runtime

namespace sandcell::runtime {
namespace {

std::vector<cap_value_t> capability_values(const std::vector<std::string>& names) {
  std::vector<cap_value_t> values;
  for (const std::string& name : names) values.push_back(capability_from_name(name));
  return values;
}

void raise_in(cap_t state, cap_flag_t flag, const std::vector<cap_value_t>& caps) {
  if (!caps.empty() && cap_set_flag(state, flag, static_cast<int>(caps.size()), caps.data(), CAP_SET) < 0)
    throw Error(errno, "cap_set_flag");
}

}  // namespace

CapabilityPlan plan_capability_sets(const CapabilitySets& sets) {
  CapabilityPlan plan;
  std::vector<cap_value_t> bounding = capability_values(sets.bounding);
  for (cap_value_t cap = 0; cap < static_cast<cap_value_t>(cap_max_bits()); ++cap)
    if (std::find(bounding.begin(), bounding.end(), cap) == bounding.end())
      plan.drop_from_bounding.push_back(cap);
  plan.keep = capability_values(sets.ambient);
  plan.final_state.reset(cap_init());
  if (!plan.final_state) throw Error(errno, "cap_init");
  raise_in(plan.final_state.get(), CAP_EFFECTIVE, capability_values(sets.effective));
  raise_in(plan.final_state.get(), CAP_PERMITTED, capability_values(sets.permitted));
  raise_in(plan.final_state.get(), CAP_INHERITABLE, capability_values(sets.inheritable));
  return plan;
}

}  // namespace sandcell::runtime
