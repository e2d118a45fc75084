// The JSON request of `sandcell code --request-json` → CodeRequest.
#include "sandcell/agent/code_request.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "sandcell/agent/code_result.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::agent {
namespace {

using nlohmann::json;

const std::vector<std::string> kRequestFields = {
    "skill",        "language", "code", "session", "timeout", "memory", "pids", "cpus", "cpu_time",
    "output_limit", "packages", "net",  "env",     "stdin",   "files",  "get",  "disk"};

std::string text(const json& j, const std::string& key) {
  if (!j[key].is_string()) throw Error::invalid("request: \"" + key + "\" must be a string");
  return j[key].get<std::string>();
}

std::vector<std::string> texts(const json& j, const std::string& key) {
  if (!j[key].is_array()) throw Error::invalid("request: \"" + key + "\" must be an array of strings");
  std::vector<std::string> out;
  for (const json& v : j[key]) {
    if (!v.is_string()) throw Error::invalid("request: \"" + key + "\" must be an array of strings");
    out.push_back(v.get<std::string>());
  }
  return out;
}

std::optional<std::string> limit(const json& j, const std::string& key) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  if (j[key].is_number()) return j[key].dump();
  if (j[key].is_string()) return j[key].get<std::string>();
  throw Error::invalid("request: \"" + key + "\" must be a number or a string");
}

std::vector<InputFile> input_files(const json& j) {
  if (!j["files"].is_array()) throw Error::invalid("request: \"files\" must be an array of {path, content_base64}");
  std::vector<InputFile> files;
  for (const json& f : j["files"]) {
    if (!f.is_object() || !f.contains("path") || !f["path"].is_string() ||
        !f.contains("content_base64") || !f["content_base64"].is_string())
      throw Error::invalid("request: each of \"files\" needs \"path\" and \"content_base64\" strings");
    std::string path = f["path"].get<std::string>();
    files.push_back({path, base64_decode(f["content_base64"].get<std::string>(), "files[" + path + "].content_base64")});
  }
  return files;
}

}  // namespace

CodeRequest parse_code_request(const json& j) {
  if (!j.is_object()) throw Error::invalid("request: must be a JSON object");
  for (const auto& [key, value] : j.items())
    if (std::find(kRequestFields.begin(), kRequestFields.end(), key) == kRequestFields.end())
      throw Error::invalid("request: unknown field \"" + key + "\"");
  CodeRequest r;
  if (j.contains("skill")) r.skill = text(j, "skill");
  else if (j.contains("language")) r.skill = text(j, "language");
  else throw Error::invalid("request: needs \"skill\" (or \"language\")");
  if (!j.contains("code")) throw Error::invalid("request: needs \"code\"");
  r.code = text(j, "code");
  if (j.contains("session") && !j["session"].is_null()) r.session = text(j, "session");
  r.limits = {.memory = limit(j, "memory"),
              .pids = limit(j, "pids"),
              .cpus = limit(j, "cpus"),
              .timeout = limit(j, "timeout"),
              .cpu_time = limit(j, "cpu_time"),
              .output_limit = limit(j, "output_limit"),
              .disk = limit(j, "disk")};
  if (j.contains("packages")) r.packages = texts(j, "packages");
  if (j.contains("net") && !j["net"].is_null()) r.net = text(j, "net");
  if (j.contains("env")) r.env = texts(j, "env");
  if (j.contains("stdin") && !j["stdin"].is_null()) r.stdin_data = text(j, "stdin");
  if (j.contains("files")) r.files = input_files(j);
  if (j.contains("get")) r.get = texts(j, "get");
  return r;
}

void check_code_text(const std::string& code, size_t max_bytes) {
  if (code.find_first_not_of(" \t\r\n") == std::string::npos) throw Error::invalid("the code is empty");
  if (code.size() > max_bytes)
    throw Error::invalid("the code is " + std::to_string(code.size()) + " bytes; the limit is " +
                         std::to_string(max_bytes) + " (put data in files with --put instead)");
  if (code.find('\0') != std::string::npos) throw Error::invalid("the code is binary (it contains NUL bytes), not source text");
  // Invalid UTF-8 would be replaced on the way back into JSON; compilers would choke on it anyway.
  try {
    (void)nlohmann::json(code).dump();
  } catch (const nlohmann::json::type_error&) {
    throw Error::invalid("the code is not valid UTF-8 text");
  }
}

}  // namespace sandcell::agent
