// Typed access to a JSON profile's fields, failing with the field's path.
#include "profile_json.hpp"

#include "sandcell/base/error.hpp"

namespace sandcell::seccomp {

void ProfileJson::fail(const std::string& path, const std::string& what) const {
  throw Error::invalid("seccomp profile " + profile_name_ + ": " + path + ": " + what);
}

const ProfileJson::json* ProfileJson::member(const json& object, const std::string& key) {
  const auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

std::string ProfileJson::join(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

std::string ProfileJson::at_index(const std::string& path, size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

const ProfileJson::json& ProfileJson::object_at(const json& value, const std::string& path) const {
  if (!value.is_object()) fail(path, "expected an object, got " + value.dump());
  return value;
}

const ProfileJson::json& ProfileJson::array_at(const json& value, const std::string& path) const {
  if (!value.is_array()) fail(path, "expected an array, got " + value.dump());
  return value;
}

std::string ProfileJson::string_at(const json& value, const std::string& path) const {
  if (!value.is_string()) fail(path, "expected a string, got " + value.dump());
  return value.get<std::string>();
}

uint64_t ProfileJson::number_at(const json& value, const std::string& path) const {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer() && value.get<int64_t>() >= 0) return value.get<uint64_t>();
  fail(path, "expected a non-negative integer, got " + value.dump());
}

std::vector<std::string> ProfileJson::strings_at(const json& value, const std::string& path) const {
  std::vector<std::string> out;
  const json& array = array_at(value, path);
  for (size_t i = 0; i < array.size(); ++i) out.push_back(string_at(array[i], at_index(path, i)));
  return out;
}

}  // namespace sandcell::seccomp
