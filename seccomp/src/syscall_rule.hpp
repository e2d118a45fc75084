#pragma once
// One entry of a JSON profile's "syscalls" (and the default action), in the schema Docker,
// Podman and the OCI runtime-spec share.
#include <string>

#include "profile_json.hpp"
#include "sandcell/seccomp/profile.hpp"

namespace sandcell::seccomp {

// Where an action and its errno live: "action"/"errnoRet"/"errno" in an entry,
// "defaultAction"/"defaultErrnoRet"/"defaultErrno" at the top level.
struct ActionFields {
  std::string action;
  std::string errno_ret;   // a number (Docker, OCI)
  std::string errno_name;  // a name such as "EPERM" (containers-common)
};

Action parse_action(const ProfileJson& reader, const nlohmann::json& object,
                    const std::string& path, const ActionFields& fields);

Rule parse_syscall_rule(const ProfileJson& reader, const nlohmann::json& entry,
                        const std::string& path);

}  // namespace sandcell::seccomp
