// Docker/Podman/OCI JSON → Profile. Follows moby's profiles/seccomp/seccomp_linux.go
// (setupSeccomp) for includes/excludes and runc's libcontainer/seccomp for actions and
// errnos, so a profile means here what it means under `docker run`.
#include "sandcell/seccomp/docker_profile.hpp"

#include <seccomp.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "errno_names.hpp"
#include "sandcell/runtime/error.hpp"

namespace sandcell::seccomp {
namespace {

using json = nlohmann::json;
using Op = ArgCondition::Op;

constexpr unsigned kSyscallArgs = 6;
constexpr int kMaxErrno = 4095;  // the kernel's MAX_ERRNO

class DockerProfileParser {
 public:
  DockerProfileParser(const std::string& name, const ProfileContext& ctx) : name_(name), ctx_(ctx) {}

  Profile parse(const json& root) const {
    if (!root.is_object()) fail("(top level)", "expected a JSON object");
    refuse_listener(root);
    check_architectures(root);
    check_flags(root);
    Profile profile{.name = name_,
                    .default_action = action(root, "defaultAction", "defaultErrnoRet",
                                             "defaultErrno", ""),
                    .rules = {},
                    .kill_foreign_abi = kill_foreign_abi(root)};
    const json* syscalls = member(root, "syscalls", "");
    if (syscalls == nullptr) return profile;
    if (!syscalls->is_array()) fail("syscalls", "expected an array");
    for (size_t i = 0; i < syscalls->size(); ++i) {
      const std::string path = "syscalls[" + std::to_string(i) + "]";
      const json& entry = (*syscalls)[i];
      if (!entry.is_object()) fail(path, "expected an object");
      if (applies(entry, path)) profile.rules.push_back(rule(entry, path));
    }
    return profile;
  }

 private:
  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw Error::invalid("seccomp profile " + name_ + ": " + path + ": " + what);
  }

  static std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }

  // The member `key`, or nullptr when it is absent or null (Docker writes "args": null).
  static const json* member(const json& object, const std::string& key, const std::string&) {
    const auto it = object.find(key);
    return it == object.end() || it->is_null() ? nullptr : &*it;
  }

  std::string string_at(const json& value, const std::string& path) const {
    if (!value.is_string()) fail(path, "expected a string, got " + value.dump());
    return value.get<std::string>();
  }

  uint64_t number_at(const json& value, const std::string& path) const {
    if (value.is_number_unsigned()) return value.get<uint64_t>();
    if (value.is_number_integer() && value.get<int64_t>() >= 0) return value.get<uint64_t>();
    fail(path, "expected a non-negative integer, got " + value.dump());
  }

  std::vector<std::string> strings_at(const json& value, const std::string& path) const {
    if (!value.is_array()) fail(path, "expected an array of strings");
    std::vector<std::string> out;
    for (size_t i = 0; i < value.size(); ++i) {
      out.push_back(string_at(value[i], path + "[" + std::to_string(i) + "]"));
    }
    return out;
  }

  // OCI's listenerPath hands notifications to an outside agent; sandcell's own supervisor is
  // the listener (for the denial report), and a filter has only one.
  void refuse_listener(const json& root) const {
    const json* listener = member(root, "listenerPath", "");
    if (listener != nullptr && !string_at(*listener, "listenerPath").empty()) {
      fail("listenerPath", "seccomp notify agents are not supported");
    }
  }

  void check_architectures(const json& root) const;
  void check_arch_name(const json& value, const std::string& path) const;
  void check_flags(const json& root) const;
  bool kill_foreign_abi(const json& root) const;
  bool applies(const json& entry, const std::string& path) const;
  bool condition_holds(const json& object, const std::string& path, bool includes) const;
  KernelVersion kernel_version(const json& value, const std::string& path) const;
  Action action(const json& object, const std::string& key, const std::string& errno_key,
                const std::string& errno_name_key, const std::string& path) const;
  int errno_value(const json& object, const std::string& errno_key,
                  const std::string& errno_name_key, const std::string& path) const;
  Rule rule(const json& entry, const std::string& path) const;
  std::vector<std::string> names(const json& entry, const std::string& path) const;
  ArgCondition arg(const json& value, const std::string& path) const;
  Op op(const json& value, const std::string& path) const;

  const std::string& name_;
  const ProfileContext& ctx_;
};

// The filter is built for the native architecture only (foreign ABIs: sandcellForeignAbi), so
// the lists are only checked for names libseccomp knows.
void DockerProfileParser::check_architectures(const json& root) const {
  const json* list = member(root, "architectures", "");
  const json* map = member(root, "archMap", "");
  if (list != nullptr && map != nullptr) {
    fail("archMap", "'architectures' and 'archMap' are both given; use one");
  }
  if (list != nullptr) {
    if (!list->is_array()) fail("architectures", "expected an array");
    for (size_t i = 0; i < list->size(); ++i) {
      check_arch_name((*list)[i], "architectures[" + std::to_string(i) + "]");
    }
  }
  if (map == nullptr) return;
  if (!map->is_array()) fail("archMap", "expected an array");
  for (size_t i = 0; i < map->size(); ++i) {
    const std::string path = "archMap[" + std::to_string(i) + "]";
    if (!(*map)[i].is_object()) fail(path, "expected an object");
    const json* arch = member((*map)[i], "architecture", "");
    if (arch == nullptr) fail(join(path, "architecture"), "missing");
    check_arch_name(*arch, join(path, "architecture"));
    if (const json* subs = member((*map)[i], "subArchitectures", ""); subs != nullptr) {
      const std::vector<std::string> names = strings_at(*subs, join(path, "subArchitectures"));
      for (size_t j = 0; j < names.size(); ++j) {
        check_arch_name((*subs)[j], join(path, "subArchitectures[" + std::to_string(j) + "]"));
      }
    }
  }
}

// "SCMP_ARCH_X86_64" is libseccomp's "x86_64".
void DockerProfileParser::check_arch_name(const json& value, const std::string& path) const {
  const std::string name = string_at(value, path);
  const std::string prefix = "SCMP_ARCH_";
  std::string token = name.starts_with(prefix) ? name.substr(prefix.size()) : std::string();
  std::transform(token.begin(), token.end(), token.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (token.empty() || seccomp_arch_resolve_name(token.c_str()) == 0) {
    fail(path, "unknown architecture '" + name + "'");
  }
}

// TSYNC is what runc does anyway (one thread at execve). LOG and SPEC_ALLOW would change what
// the filter records or weaken the Spectre mitigation; neither is carried, so they are refused
// rather than silently dropped.
void DockerProfileParser::check_flags(const json& root) const {
  const json* flags = member(root, "flags", "");
  if (flags == nullptr) return;
  const std::vector<std::string> names = strings_at(*flags, "flags");
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == "SECCOMP_FILTER_FLAG_TSYNC") continue;
    const std::string path = "flags[" + std::to_string(i) + "]";
    if (names[i] == "SECCOMP_FILTER_FLAG_LOG" || names[i] == "SECCOMP_FILTER_FLAG_SPEC_ALLOW") {
      fail(path, "'" + names[i] + "' is not supported");
    }
    fail(path, "unknown flag '" + names[i] + "'");
  }
}

// sandcell's extension (seccomp/profiles/README.md); profiles without it get "errno", the
// gentler answer, since Docker would have judged such calls by the rules.
bool DockerProfileParser::kill_foreign_abi(const json& root) const {
  const json* value = member(root, "sandcellForeignAbi", "");
  if (value == nullptr) return false;
  const std::string mode = string_at(*value, "sandcellForeignAbi");
  if (mode == "kill") return true;
  if (mode == "errno") return false;
  fail("sandcellForeignAbi", "expected \"kill\" or \"errno\", got '" + mode + "'");
}

// Docker's rule: an entry applies unless an `excludes` condition holds or an `includes` one
// fails. Capabilities: includes needs all, excludes is hit by any.
bool DockerProfileParser::applies(const json& entry, const std::string& path) const {
  const json* excludes = member(entry, "excludes", "");
  if (excludes != nullptr && condition_holds(*excludes, join(path, "excludes"), false)) {
    return false;
  }
  const json* includes = member(entry, "includes", "");
  return includes == nullptr || condition_holds(*includes, join(path, "includes"), true);
}

// For includes: every given condition holds. For excludes: any given condition holds.
bool DockerProfileParser::condition_holds(const json& object, const std::string& path,
                                          bool includes) const {
  if (!object.is_object()) fail(path, "expected an object");
  const auto kept = [this](const std::string& cap) {
    return std::find(ctx_.capabilities.begin(), ctx_.capabilities.end(), cap) !=
           ctx_.capabilities.end();
  };
  std::vector<bool> results;
  if (const json* caps = member(object, "caps", ""); caps != nullptr) {
    const std::vector<std::string> names = strings_at(*caps, join(path, "caps"));
    results.push_back(includes ? std::all_of(names.begin(), names.end(), kept)
                               : std::any_of(names.begin(), names.end(), kept));
  }
  if (const json* arches = member(object, "arches", ""); arches != nullptr) {
    const std::vector<std::string> names = strings_at(*arches, join(path, "arches"));
    results.push_back(std::find(names.begin(), names.end(), ctx_.arch) != names.end());
  }
  if (const json* min = member(object, "minKernel", ""); min != nullptr) {
    results.push_back(ctx_.kernel >= kernel_version(*min, join(path, "minKernel")));
  }
  return includes ? std::all_of(results.begin(), results.end(), [](bool b) { return b; })
                  : std::any_of(results.begin(), results.end(), [](bool b) { return b; });
}

KernelVersion DockerProfileParser::kernel_version(const json& value,
                                                  const std::string& path) const {
  const std::string text = string_at(value, path);
  KernelVersion version;
  char dot = 0;
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%u%c%u%n", &version.major, &dot, &version.minor, &consumed) != 3 ||
      dot != '.' || static_cast<size_t>(consumed) != text.size()) {
    fail(path, "invalid kernel version '" + text + "' (expected major.minor)");
  }
  return version;
}

}  // namespace
}  // namespace sandcell::seccomp
