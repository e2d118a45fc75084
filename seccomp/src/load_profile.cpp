// `--seccomp FILE|default|code|builtin|unconfined` → the profile to compile, if any.
#include <sys/stat.h>

#include <cerrno>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sandcell/runtime/error.hpp"
#include "sandcell/seccomp/docker_profile.hpp"

namespace sandcell::seccomp {
namespace {

}  // namespace

// The source tree's profiles while developing; the installed copies otherwise.
std::string shipped_profile_path(const std::string& file) {
  const std::string in_tree = std::string(SANDCELL_SECCOMP_PROFILE_DIR) + "/" + file;
  struct stat st {};
  if (::stat(in_tree.c_str(), &st) == 0) return in_tree;
  return "/usr/share/sandcell/seccomp/" + file;
}

std::string shipped_profile_file(const std::string& name) { return shipped_profile_path(name + ".json"); }

namespace {

nlohmann::json read_json(const std::string& path, const std::string& name) {
  std::ifstream in(path);
  if (!in) throw Error(errno, "read seccomp profile " + path);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw Error(EIO, "read seccomp profile " + path);
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw Error::invalid("seccomp profile " + name + ": not valid JSON: " + e.what());
  }
}

Profile load_file(const std::string& path, const std::string& name, const ProfileContext& ctx) {
  return parse_docker_profile(read_json(path, name), name, ctx);
}

}  // namespace

std::optional<Profile> load_profile_arg(const std::string& arg, const ProfileContext& ctx) {
  if (arg == "unconfined") return std::nullopt;
  if (arg == "builtin") return builtin_profile();
  if (arg == "default" || arg == "code") {
    return load_file(shipped_profile_path(arg + ".json"), arg, ctx);
  }
  if (arg.empty()) throw Error::invalid("--seccomp: empty profile name");
  return load_file(arg, arg, ctx);
}

}  // namespace sandcell::seccomp
