// Docker/Podman/OCI JSON → Profile. The includes/excludes logic follows moby's
// profiles/seccomp/seccomp_linux.go (setupSeccomp), so an entry applies here exactly when it
// would under `docker run` with the same capabilities.
#include "sandcell/seccomp/docker_profile.hpp"

#include <seccomp.h>

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "profile_json.hpp"
#include "syscall_rule.hpp"

namespace sandcell::seccomp {
namespace {

using json = nlohmann::json;

// "SCMP_ARCH_X86_64" is libseccomp's "x86_64".
void check_arch_name(const ProfileJson& reader, const json& value, const std::string& path) {
  const std::string name = reader.string_at(value, path);
  const std::string prefix = "SCMP_ARCH_";
  std::string token = name.starts_with(prefix) ? name.substr(prefix.size()) : std::string();
  std::transform(token.begin(), token.end(), token.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (token.empty() || seccomp_arch_resolve_name(token.c_str()) == 0) {
    reader.fail(path, "unknown architecture '" + name + "'");
  }
}

void check_arch_map_entry(const ProfileJson& reader, const json& value, const std::string& path) {
  const json& entry = reader.object_at(value, path);
  const json* arch = ProfileJson::member(entry, "architecture");
  if (arch == nullptr) reader.fail(ProfileJson::join(path, "architecture"), "missing");
  check_arch_name(reader, *arch, ProfileJson::join(path, "architecture"));
  if (const json* subs = ProfileJson::member(entry, "subArchitectures"); subs != nullptr) {
    const std::string subs_path = ProfileJson::join(path, "subArchitectures");
    const json& array = reader.array_at(*subs, subs_path);
    for (size_t i = 0; i < array.size(); ++i) {
      check_arch_name(reader, array[i], ProfileJson::at_index(subs_path, i));
    }
  }
}

// The filter is built for the native architecture only (other ABIs: sandcellForeignAbi), so
// the architecture lists are only checked, as Docker checks them.
void check_architectures(const ProfileJson& reader, const json& root) {
  const json* list = ProfileJson::member(root, "architectures");
  const json* map = ProfileJson::member(root, "archMap");
  if (list != nullptr && map != nullptr) {
    reader.fail("archMap", "'architectures' and 'archMap' are both given; use one");
  }
  if (list != nullptr) {
    const json& array = reader.array_at(*list, "architectures");
    for (size_t i = 0; i < array.size(); ++i) {
      check_arch_name(reader, array[i], ProfileJson::at_index("architectures", i));
    }
  }
  if (map == nullptr) return;
  const json& array = reader.array_at(*map, "archMap");
  for (size_t i = 0; i < array.size(); ++i) {
    check_arch_map_entry(reader, array[i], ProfileJson::at_index("archMap", i));
  }
}

// TSYNC is what happens anyway (one thread at execve; runc treats it so). LOG and SPEC_ALLOW
// would change what the kernel logs or weaken the Spectre mitigation; the compiled program does
// not carry them, so they are refused rather than silently dropped.
void check_flags(const ProfileJson& reader, const json& root) {
  const json* flags = ProfileJson::member(root, "flags");
  if (flags == nullptr) return;
  const std::vector<std::string> names = reader.strings_at(*flags, "flags");
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == "SECCOMP_FILTER_FLAG_TSYNC") continue;
    const bool known =
        names[i] == "SECCOMP_FILTER_FLAG_LOG" || names[i] == "SECCOMP_FILTER_FLAG_SPEC_ALLOW";
    reader.fail(ProfileJson::at_index("flags", i),
                "'" + names[i] + (known ? "' is not supported" : "' is not a seccomp flag"));
  }
}

// OCI's listenerPath hands notifications to an outside agent. sandcell's supervisor is the
// listener (it keeps the denial report), and a filter has only one.
void refuse_listener(const ProfileJson& reader, const json& root) {
  const json* listener = ProfileJson::member(root, "listenerPath");
  if (listener != nullptr && !reader.string_at(*listener, "listenerPath").empty()) {
    reader.fail("listenerPath", "seccomp notify agents are not supported");
  }
}

// sandcell's extension (seccomp/profiles/README.md). Without it: "errno", the gentler answer,
// since Docker would have judged such calls by the profile's rules rather than killing.
bool kill_foreign_abi(const ProfileJson& reader, const json& root) {
  const json* value = ProfileJson::member(root, "sandcellForeignAbi");
  if (value == nullptr) return false;
  const std::string mode = reader.string_at(*value, "sandcellForeignAbi");
  if (mode != "kill" && mode != "errno") {
    reader.fail("sandcellForeignAbi", "expected \"kill\" or \"errno\", got '" + mode + "'");
  }
  return mode == "kill";
}

KernelVersion kernel_version(const ProfileJson& reader, const json& value,
                             const std::string& path) {
  const std::string text = reader.string_at(value, path);
  KernelVersion version;
  char dot = 0;
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%u%c%u%n", &version.major, &dot, &version.minor, &consumed) != 3 ||
      dot != '.' || static_cast<size_t>(consumed) != text.size()) {
    reader.fail(path, "invalid kernel version '" + text + "' (expected major.minor)");
  }
  return version;
}

// The results of the conditions an includes/excludes object gives. Capabilities, as Docker
// reads them: an includes needs all of them kept, an excludes is hit by any kept one.
std::vector<bool> condition_results(const ProfileJson& reader, const json& value,
                                    const std::string& path, bool includes,
                                    const ProfileContext& ctx) {
  const json& object = reader.object_at(value, path);
  const auto kept = [&ctx](const std::string& cap) {
    return std::find(ctx.capabilities.begin(), ctx.capabilities.end(), cap) !=
           ctx.capabilities.end();
  };
  std::vector<bool> results;
  if (const json* caps = ProfileJson::member(object, "caps"); caps != nullptr) {
    const std::vector<std::string> names =
        reader.strings_at(*caps, ProfileJson::join(path, "caps"));
    results.push_back(includes ? std::all_of(names.begin(), names.end(), kept)
                               : std::any_of(names.begin(), names.end(), kept));
  }
  if (const json* arches = ProfileJson::member(object, "arches"); arches != nullptr) {
    const std::vector<std::string> names =
        reader.strings_at(*arches, ProfileJson::join(path, "arches"));
    results.push_back(std::find(names.begin(), names.end(), ctx.arch) != names.end());
  }
  if (const json* min = ProfileJson::member(object, "minKernel"); min != nullptr) {
    results.push_back(ctx.kernel >=
                      kernel_version(reader, *min, ProfileJson::join(path, "minKernel")));
  }
  return results;
}

// An entry applies unless one of its excludes holds or one of its includes fails.
bool entry_applies(const ProfileJson& reader, const json& entry, const std::string& path,
                   const ProfileContext& ctx) {
  const auto holds = [](bool result) { return result; };
  if (const json* excludes = ProfileJson::member(entry, "excludes"); excludes != nullptr) {
    const std::vector<bool> hit =
        condition_results(reader, *excludes, ProfileJson::join(path, "excludes"), false, ctx);
    if (std::any_of(hit.begin(), hit.end(), holds)) return false;
  }
  if (const json* includes = ProfileJson::member(entry, "includes"); includes != nullptr) {
    const std::vector<bool> met =
        condition_results(reader, *includes, ProfileJson::join(path, "includes"), true, ctx);
    if (!std::all_of(met.begin(), met.end(), holds)) return false;
  }
  return true;
}

std::vector<Rule> rules_of(const ProfileJson& reader, const json& root, const ProfileContext& ctx) {
  std::vector<Rule> rules;
  const json* syscalls = ProfileJson::member(root, "syscalls");
  if (syscalls == nullptr) return rules;
  const json& array = reader.array_at(*syscalls, "syscalls");
  for (size_t i = 0; i < array.size(); ++i) {
    const std::string path = ProfileJson::at_index("syscalls", i);
    const json& entry = reader.object_at(array[i], path);
    // Parsed even when it does not apply here, so a broken entry fails on every host.
    Rule rule = parse_syscall_rule(reader, entry, path);
    if (entry_applies(reader, entry, path, ctx)) rules.push_back(std::move(rule));
  }
  return rules;
}

}  // namespace

Profile parse_docker_profile(const json& json_profile, const std::string& name,
                             const ProfileContext& ctx) {
  const ProfileJson reader(name);
  const json& root = reader.object_at(json_profile, "(top level)");
  refuse_listener(reader, root);
  check_architectures(reader, root);
  check_flags(reader, root);
  return {.name = name,
          .default_action =
              parse_action(reader, root, "", {"defaultAction", "defaultErrnoRet", "defaultErrno"}),
          .rules = rules_of(reader, root, ctx),
          .kill_foreign_abi = kill_foreign_abi(reader, root)};
}

}  // namespace sandcell::seccomp
