#pragma once
// The sections of config.json, one parser each (config*.cpp).
#include <nlohmann/json.hpp>

#include "sandcell/oci/config.hpp"

namespace sandcell::oci {

void parse_linux(const nlohmann::json& linux, runtime::Spec& spec);
std::vector<runtime::ContainerMount> parse_mounts(const nlohmann::json& mounts, const std::string& bundle);
Hooks parse_hooks(const nlohmann::json& hooks);

}  // namespace sandcell::oci
