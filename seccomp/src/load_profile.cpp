// `--seccomp FILE|default|code|builtin|unconfined` → the profile to compile, if any.
#include <sys/stat.h>

#include <cerrno>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sandcell/base/error.hpp"
#include "sandcell/base/shipped_data.hpp"
#include "sandcell/seccomp/docker_profile.hpp"
#include "sandcell/base/bounded_json.hpp"

namespace sandcell::seccomp {
namespace {

}  // namespace

// An installed tree's profiles, else the source tree's (base/shipped_data.hpp).
std::string shipped_profile_path(const std::string& file) {
  return runtime::shipped_data_dir("seccomp", SANDCELL_SECCOMP_PROFILE_DIR) + "/" + file;
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
    return parse_bounded_json(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    // A shipped profile is named by the word the user gave: say which file that was.
    const std::string which = name == path ? name : name + " (" + path + ")";
    throw Error::invalid("seccomp profile " + which + ": not valid JSON: " + e.what());
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
