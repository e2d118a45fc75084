// Actions, errnos and argument conditions as runc reads them (libcontainer/seccomp), so a
// profile behaves as it does under Docker and Podman.
#include "syscall_rule.hpp"

#include <cerrno>
#include <map>

#include "errno_names.hpp"

namespace sandcell::seccomp {
namespace {

using json = nlohmann::json;
using Op = ArgCondition::Op;

constexpr uint64_t kSyscallArgs = 6;
constexpr uint64_t kMaxErrno = 4095;  // the kernel's MAX_ERRNO; SECCOMP_RET_DATA holds it

std::optional<ActionKind> action_kind(const std::string& name) {
  static const std::map<std::string, ActionKind> kinds = {
      // libseccomp's SCMP_ACT_KILL is SECCOMP_RET_KILL_THREAD; runc maps it so too.
      {"SCMP_ACT_KILL", ActionKind::KillThread},
      {"SCMP_ACT_KILL_THREAD", ActionKind::KillThread},
      {"SCMP_ACT_KILL_PROCESS", ActionKind::KillProcess},
      {"SCMP_ACT_TRAP", ActionKind::Trap},
      {"SCMP_ACT_ERRNO", ActionKind::Errno},
      {"SCMP_ACT_ALLOW", ActionKind::Allow},
      {"SCMP_ACT_LOG", ActionKind::Log},
      // sandcell's supervisor is the listener: the call is recorded and denied (default errno).
      {"SCMP_ACT_NOTIFY", ActionKind::Notify},
  };
  const auto it = kinds.find(name);
  if (it == kinds.end()) return std::nullopt;
  return it->second;
}

// errnoRet (a number) and/or errno (a name); containers-common writes both, which must agree.
// Neither: EPERM, runc's default for SCMP_ACT_ERRNO.
int errno_value(const ProfileJson& reader, const json& object, const std::string& path,
                const ActionFields& fields) {
  std::optional<int> value;
  if (const json* ret = ProfileJson::member(object, fields.errno_ret); ret != nullptr) {
    const std::string ret_path = ProfileJson::join(path, fields.errno_ret);
    const uint64_t number = reader.number_at(*ret, ret_path);
    if (number > kMaxErrno) reader.fail(ret_path, std::to_string(number) + " is not an errno");
    value = static_cast<int>(number);
  }
  if (const json* name = ProfileJson::member(object, fields.errno_name); name != nullptr) {
    const std::string name_path = ProfileJson::join(path, fields.errno_name);
    const std::string text = reader.string_at(*name, name_path);
    const std::optional<int> named = errno_from_name(text);
    if (!named) reader.fail(name_path, "unknown errno name '" + text + "'");
    if (value && *value != *named) {
      reader.fail(name_path, "'" + text + "' disagrees with " + fields.errno_ret + " " +
                                 std::to_string(*value));
    }
    value = named;
  }
  return value.value_or(EPERM);
}

Op op_of(const ProfileJson& reader, const json& value, const std::string& path) {
  static const std::map<std::string, Op> ops = {
      {"SCMP_CMP_NE", Op::NotEqual},           {"SCMP_CMP_LT", Op::Less},
      {"SCMP_CMP_LE", Op::LessEqual},          {"SCMP_CMP_EQ", Op::Equal},
      {"SCMP_CMP_GE", Op::GreaterEqual},       {"SCMP_CMP_GT", Op::Greater},
      {"SCMP_CMP_MASKED_EQ", Op::MaskedEqual},
  };
  const std::string name = reader.string_at(value, path);
  const auto it = ops.find(name);
  if (it == ops.end()) reader.fail(path, "unknown operator '" + name + "'");
  return it->second;
}

// For SCMP_CMP_MASKED_EQ "value" is the mask and "valueTwo" what (arg & mask) must equal, as in
// libseccomp's datum_a/datum_b.
ArgCondition arg_condition(const ProfileJson& reader, const json& value, const std::string& path) {
  const json& object = reader.object_at(value, path);
  const auto required = [&](const std::string& key) -> const json& {
    const json* field = ProfileJson::member(object, key);
    if (field == nullptr) reader.fail(ProfileJson::join(path, key), "missing");
    return *field;
  };
  const uint64_t index = reader.number_at(required("index"), ProfileJson::join(path, "index"));
  if (index >= kSyscallArgs) {
    reader.fail(ProfileJson::join(path, "index"),
                std::to_string(index) + " is out of range (a syscall has arguments 0..5)");
  }
  const json* two = ProfileJson::member(object, "valueTwo");
  return {.index = static_cast<unsigned>(index),
          .op = op_of(reader, required("op"), ProfileJson::join(path, "op")),
          .value = reader.number_at(required("value"), ProfileJson::join(path, "value")),
          .value_two =
              two == nullptr ? 0 : reader.number_at(*two, ProfileJson::join(path, "valueTwo"))};
}

// "names", or Docker's older single "name"; not both, as Docker checks.
std::vector<std::string> syscall_names(const ProfileJson& reader, const json& entry,
                                       const std::string& path) {
  const json* names = ProfileJson::member(entry, "names");
  const json* name = ProfileJson::member(entry, "name");
  if (names != nullptr && name != nullptr) {
    reader.fail(ProfileJson::join(path, "name"), "'name' and 'names' are both given; use one");
  }
  if (name != nullptr) return {reader.string_at(*name, ProfileJson::join(path, "name"))};
  if (names == nullptr) reader.fail(ProfileJson::join(path, "names"), "missing");
  std::vector<std::string> list = reader.strings_at(*names, ProfileJson::join(path, "names"));
  if (list.empty()) reader.fail(ProfileJson::join(path, "names"), "empty");
  return list;
}

}  // namespace

// SCMP_ACT_TRACE hands the call to a ptrace tracer. No tracer is ever attached in a sandcell
// sandbox, and the kernel answers SECCOMP_RET_TRACE without one with ENOSYS
// (Documentation/userspace-api/seccomp_filter.rst), so that is what it compiles to: the program
// sees exactly what it would under runc.
Action parse_action(const ProfileJson& reader, const json& object, const std::string& path,
                    const ActionFields& fields) {
  const std::string action_path = ProfileJson::join(path, fields.action);
  const json* field = ProfileJson::member(object, fields.action);
  if (field == nullptr) reader.fail(action_path, "missing");
  const std::string name = reader.string_at(*field, action_path);
  if (name == "SCMP_ACT_TRACE") return {ActionKind::Errno, ENOSYS};
  const std::optional<ActionKind> kind = action_kind(name);
  if (!kind) reader.fail(action_path, "unknown action '" + name + "'");
  if (*kind != ActionKind::Errno) {
    // The runtime-spec (config-linux.md, seccomp): an errno on an action that returns none
    // "MUST print an error and fail" rather than be dropped.
    for (const std::string& key : {fields.errno_ret, fields.errno_name})
      if (ProfileJson::member(object, key) != nullptr)
        reader.fail(ProfileJson::join(path, key), name + " returns no errno; remove " + key + " or use SCMP_ACT_ERRNO");
    return {*kind, 0};
  }
  return {ActionKind::Errno, errno_value(reader, object, path, fields)};
}

Rule parse_syscall_rule(const ProfileJson& reader, const json& entry, const std::string& path) {
  Rule rule{.names = syscall_names(reader, entry, path),
            .action = parse_action(reader, entry, path, {"action", "errnoRet", "errno"}),
            .args = {}};
  if (const json* args = ProfileJson::member(entry, "args"); args != nullptr) {
    const std::string args_path = ProfileJson::join(path, "args");
    const json& array = reader.array_at(*args, args_path);
    for (size_t i = 0; i < array.size(); ++i) {
      rule.args.push_back(arg_condition(reader, array[i], ProfileJson::at_index(args_path, i)));
    }
  }
  return rule;
}

}  // namespace sandcell::seccomp
