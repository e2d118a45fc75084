#pragma once
// config.json (OCI runtime-spec) → runtime::Spec, plus the parts sandcell-oci itself acts on
// (hooks, annotations). Unknown fields are ignored; a field of the wrong type or value throws
// sandcell::Error (input error) naming it, e.g. "linux.resources.memory.limit: expected an
// integer".
#include <nlohmann/json.hpp>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sandcell/runtime/spec.hpp"

namespace sandcell::oci {

struct Hook {
  std::string path;
  std::vector<std::string> args, env;
  std::optional<int> timeout_s;
};

struct Hooks {
  std::vector<Hook> prestart, create_runtime, create_container, start_container, poststart, poststop;
};

struct Config {
  runtime::Spec spec;
  Hooks hooks;
  std::map<std::string, std::string> annotations;
  std::string oci_version;
  // linux.resources as written: applied to the cgroups of linux.cgroupsPath (cgroup_resources.hpp).
  nlohmann::json resources = nlohmann::json::object();
};

// `bundle` is the absolute bundle directory: a relative root.path is taken from there.
Config parse_config(const nlohmann::json& config, const std::string& bundle);
// <bundle>/config.json
Config load_config(const std::string& bundle);

// An OCI "process" object (exec --process FILE) applied over `spec` (the container's own).
void apply_process(const nlohmann::json& process, runtime::Spec& spec);

// "rbind,ro,nosuid,mode=755" as mount options → flags, propagation and data.
runtime::ContainerMount mount_from_options(const std::vector<std::string>& options);

// The config.json `sandcell-oci spec` writes: runc's default, with `sh` as the program.
nlohmann::json default_config();

}  // namespace sandcell::oci
