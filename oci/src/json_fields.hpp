#pragma once
// Typed reads of config.json values; a wrong type throws an input error naming the field path.
#include <nlohmann/json.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace sandcell::oci::fields {

// The member, or nullptr when absent or null (the spec treats both as "not set").
const nlohmann::json* find(const nlohmann::json& object, const char* key);

std::string text(const nlohmann::json& value, const std::string& path);
bool boolean(const nlohmann::json& value, const std::string& path);
int64_t integer(const nlohmann::json& value, const std::string& path);
uint64_t unsigned_integer(const nlohmann::json& value, const std::string& path);
std::vector<std::string> texts(const nlohmann::json& value, const std::string& path);
const nlohmann::json& object(const nlohmann::json& value, const std::string& path);
const nlohmann::json& array(const nlohmann::json& value, const std::string& path);

}  // namespace sandcell::oci::fields
