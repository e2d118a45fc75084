// `--seccomp FILE|default|code|builtin|unconfined` → the profile to compile, if any.
#include <sys/stat.h>

#include <cerrno>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string_view>

#include "sandcell/base/bounded_json.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/shipped_data.hpp"
#include "sandcell/seccomp/docker_profile.hpp"

namespace sandcell::seccomp {

// Generated from seccomp/profiles/*.json (seccomp/CMakeLists.txt).
std::optional<std::string_view> embedded_profile(std::string_view file_name);

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(errno, "read seccomp profile " + path);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw Error(EIO, "read seccomp profile " + path);
  return std::move(text).str();
}

// `origin` is where the text came from; a shipped profile is named by the word the user gave,
// so the error says which file (or copy) that was.
Profile parse_text(const std::string& text, const std::string& name, const std::string& origin,
                   const ProfileContext& ctx) {
  nlohmann::json json;
  try {
    json = parse_bounded_json(text);
  } catch (const nlohmann::json::parse_error& e) {
    const std::string which = name == origin ? name : name + " (" + origin + ")";
    throw Error::invalid("seccomp profile " + which + ": not valid JSON: " + e.what());
  }
  return parse_docker_profile(json, name, ctx);
}

}  // namespace

ShippedProfile shipped_profile(const std::string& name) {
  const std::string file = name + ".json";
  const std::string path =
      runtime::shipped_data_dir("seccomp", SANDCELL_SECCOMP_PROFILE_DIR) + "/" + file;
  struct stat st {};
  if (stat(path.c_str(), &st) == 0) return {read_text(path), path};
  if (auto text = embedded_profile(file)) return {std::string(*text), "compiled in"};
  throw Error(ENOENT,
              "seccomp profile " + name + ": neither " + path + " nor a compiled-in copy exists");
}

std::optional<Profile> load_profile_arg(const std::string& arg, const ProfileContext& ctx) {
  if (arg == "unconfined") return std::nullopt;
  if (arg == "builtin") return builtin_profile();
  if (arg == "default" || arg == "code") {
    ShippedProfile shipped = shipped_profile(arg);
    return parse_text(shipped.text, arg, shipped.origin, ctx);
  }
  if (arg.empty()) throw Error::invalid("--seccomp: empty profile name");
  return parse_text(read_text(arg), arg, arg, ctx);
}

}  // namespace sandcell::seccomp
