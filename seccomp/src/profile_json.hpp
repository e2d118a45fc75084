#pragma once
// Reading a JSON seccomp profile so that every error names the profile, the JSON path and the
// entry index: "seccomp profile x.json: syscalls[12].args[0].op: unknown operator 'SCMP_CMP_FOO'".
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace sandcell::seccomp {

class ProfileJson {
 public:
  using json = nlohmann::json;

  explicit ProfileJson(std::string profile_name) : profile_name_(std::move(profile_name)) {}

  [[noreturn]] void fail(const std::string& path, const std::string& what) const;

  // The member `key`, or nullptr when it is absent or null (Docker writes "args": null).
  static const json* member(const json& object, const std::string& key);
  static std::string join(const std::string& path, const std::string& key);
  static std::string at_index(const std::string& path, size_t index);

  const json& object_at(const json& value, const std::string& path) const;
  const json& array_at(const json& value, const std::string& path) const;
  std::string string_at(const json& value, const std::string& path) const;
  uint64_t number_at(const json& value, const std::string& path) const;
  std::vector<std::string> strings_at(const json& value, const std::string& path) const;

 private:
  std::string profile_name_;
};

}  // namespace sandcell::seccomp
