// config.json "process" → the process half of runtime::Spec.
#include <sys/capability.h>
#include <sys/resource.h>

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "config_parts.hpp"
#include "json_fields.hpp"
#include "sandcell/oci/config.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::oci {
namespace {

using nlohmann::json;
namespace f = fields;

int rlimit_resource(const std::string& type, const std::string& path) {
  if (std::optional<int> resource = runtime::rlimit_resource(type)) return *resource;
  throw Error::invalid(path + ": unknown rlimit type '" + type + "'");
}

std::vector<runtime::Rlimit> parse_rlimits(const json& value) {
  std::vector<runtime::Rlimit> limits;
  const json& list = f::array(value, "process.rlimits");
  for (size_t i = 0; i < list.size(); ++i) {
    std::string path = "process.rlimits[" + std::to_string(i) + "]";
    const json& entry = f::object(list[i], path);
    const json* type = f::find(entry, "type");
    if (type == nullptr) throw Error::invalid(path + ".type: missing");
    runtime::Rlimit limit{.resource = rlimit_resource(f::text(*type, path + ".type"), path + ".type"),
                          .soft = 0, .hard = 0};
    if (const json* v = f::find(entry, "soft")) limit.soft = f::unsigned_integer(*v, path + ".soft");
    if (const json* v = f::find(entry, "hard")) limit.hard = f::unsigned_integer(*v, path + ".hard");
    if (limit.soft > limit.hard) throw Error::invalid(path + ": soft limit is above the hard limit");
    for (const runtime::Rlimit& seen : limits)
      if (seen.resource == limit.resource) throw Error::invalid(path + ".type: listed twice");
    limits.push_back(limit);
  }
  return limits;
}

void parse_user(const json& user, runtime::Spec& spec) {
  f::object(user, "process.user");
  if (const json* v = f::find(user, "uid")) spec.uid = static_cast<uid_t>(f::unsigned_integer(*v, "process.user.uid"));
  if (const json* v = f::find(user, "gid")) spec.gid = static_cast<gid_t>(f::unsigned_integer(*v, "process.user.gid"));
  if (const json* v = f::find(user, "umask"))
    spec.container->umask = static_cast<uint32_t>(f::unsigned_integer(*v, "process.user.umask"));
  if (const json* v = f::find(user, "additionalGids")) {
    spec.additional_gids.clear();
    const json& gids = f::array(*v, "process.user.additionalGids");
    for (size_t i = 0; i < gids.size(); ++i)
      spec.additional_gids.push_back(static_cast<gid_t>(
          f::unsigned_integer(gids[i], "process.user.additionalGids[" + std::to_string(i) + "]")));
  }
  if (f::find(user, "username")) throw Error::invalid("process.user.username: only for Windows containers");
}

void parse_capabilities(const json& caps, runtime::CapabilitySets& sets) {
  f::object(caps, "process.capabilities");
  std::pair<const char*, std::vector<std::string>*> kSets[] = {
      {"bounding", &sets.bounding},       {"effective", &sets.effective}, {"permitted", &sets.permitted},
      {"inheritable", &sets.inheritable}, {"ambient", &sets.ambient}};
  for (auto& [name, target] : kSets) {
    std::string path = std::string("process.capabilities.") + name;
    target->clear();
    if (!f::find(caps, name)) continue;
    // The runtime-spec: a capability this kernel has no number for MUST be logged as a warning
    // (and SHOULD NOT fail the container); runc drops it with a warning too.
    for (const std::string& cap : f::texts(caps[name], path)) {
      std::string lower = cap;
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      cap_value_t value = 0;
      bool known = lower.starts_with("cap_") && cap_from_name(lower.c_str(), &value) == 0;
      if (known)
        target->push_back(cap);
      else
        fprintf(stderr, "sandcell-oci: warning: %s: unknown capability '%s' is ignored\n", path.c_str(), cap.c_str());
    }
  }
}

void parse_terminal(const json& process, runtime::Container& c) {
  if (const json* v = f::find(process, "terminal")) c.terminal = f::boolean(*v, "process.terminal");
  if (const json* size = f::find(process, "consoleSize")) {
    f::object(*size, "process.consoleSize");
    if (const json* h = f::find(*size, "height"))
      c.console_rows = static_cast<uint16_t>(f::unsigned_integer(*h, "process.consoleSize.height"));
    if (const json* w = f::find(*size, "width"))
      c.console_columns = static_cast<uint16_t>(f::unsigned_integer(*w, "process.consoleSize.width"));
  }
}

}  // namespace

void apply_process(const json& process, runtime::Spec& spec) {
  f::object(process, "process");
  // Valid values the runtime-spec defines that sandcell-oci does not apply: an error, not a
  // silent drop (config.md, Valid values).
  for (const char* unsupported : {"scheduler", "ioPriority", "execCPUAffinity"})
    if (f::find(process, unsupported))
      throw Error::invalid(std::string("process.") + unsupported + ": not supported by sandcell-oci");
  runtime::Container& c = *spec.container;
  parse_terminal(process, c);
  if (const json* v = f::find(process, "user")) parse_user(*v, spec);
  if (const json* v = f::find(process, "args")) spec.args = f::texts(*v, "process.args");
  if (const json* v = f::find(process, "env")) spec.env = f::texts(*v, "process.env");
  for (const std::string& entry : spec.env)
    if (entry.find('=') == std::string::npos) throw Error::invalid("process.env: entry '" + entry + "' is not K=V");
  if (const json* v = f::find(process, "cwd")) spec.cwd = f::text(*v, "process.cwd");
  if (spec.cwd.empty() || spec.cwd[0] != '/') throw Error::invalid("process.cwd: must be an absolute path: '" + spec.cwd + "'");
  if (const json* v = f::find(process, "capabilities")) parse_capabilities(*v, c.capabilities);
  if (const json* v = f::find(process, "rlimits")) spec.rlimits = parse_rlimits(*v);
  if (const json* v = f::find(process, "noNewPrivileges")) spec.no_new_privileges = f::boolean(*v, "process.noNewPrivileges");
  if (const json* v = f::find(process, "apparmorProfile")) c.apparmor_profile = f::text(*v, "process.apparmorProfile");
  if (const json* v = f::find(process, "oomScoreAdj")) {
    int64_t adj = f::integer(*v, "process.oomScoreAdj");
    if (adj < -1000 || adj > 1000) throw Error::invalid("process.oomScoreAdj: must be within -1000..1000");
    c.oom_score_adj = static_cast<int>(adj);
  }
  if (spec.args.empty()) throw Error::invalid("process.args: at least one entry (the program) is required");
}

}  // namespace sandcell::oci
