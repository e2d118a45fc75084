#include "json_fields.hpp"

#include "sandcell/base/error.hpp"

namespace sandcell::oci::fields {
namespace {

Error wrong(const std::string& path, const char* expected, const nlohmann::json& value) {
  return Error::invalid(path + ": expected " + expected + ", got " + value.dump());
}

}  // namespace

const nlohmann::json* find(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

std::string text(const nlohmann::json& value, const std::string& path) {
  if (!value.is_string()) throw wrong(path, "a string", value);
  return value.get<std::string>();
}

bool boolean(const nlohmann::json& value, const std::string& path) {
  if (!value.is_boolean()) throw wrong(path, "true or false", value);
  return value.get<bool>();
}

int64_t integer(const nlohmann::json& value, const std::string& path) {
  if (!value.is_number_integer()) throw wrong(path, "an integer", value);
  return value.get<int64_t>();
}

uint64_t unsigned_integer(const nlohmann::json& value, const std::string& path) {
  if (!value.is_number_integer() || (value.is_number_integer() && !value.is_number_unsigned() && value.get<int64_t>() < 0))
    throw wrong(path, "a non-negative integer", value);
  return value.get<uint64_t>();
}

std::vector<std::string> texts(const nlohmann::json& value, const std::string& path) {
  if (!value.is_array()) throw wrong(path, "an array of strings", value);
  std::vector<std::string> out;
  for (size_t i = 0; i < value.size(); ++i) out.push_back(text(value[i], path + "[" + std::to_string(i) + "]"));
  return out;
}

const nlohmann::json& object(const nlohmann::json& value, const std::string& path) {
  if (!value.is_object()) throw wrong(path, "an object", value);
  return value;
}

const nlohmann::json& array(const nlohmann::json& value, const std::string& path) {
  if (!value.is_array()) throw wrong(path, "an array", value);
  return value;
}

}  // namespace sandcell::oci::fields
