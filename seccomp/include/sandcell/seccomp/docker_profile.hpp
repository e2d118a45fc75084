#pragma once
// Seccomp profiles written as JSON: Docker's schema (moby profiles/seccomp/default.json), the
// containers-common variant Podman ships (errno names beside the numbers), and the OCI
// runtime-spec `linux.seccomp` object, which is a subset of Docker's schema.
#include <compare>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sandcell/seccomp/profile.hpp"

namespace sandcell::seccomp {

struct KernelVersion {
  unsigned major = 0;
  unsigned minor = 0;
  auto operator<=>(const KernelVersion&) const = default;
};

// The architecture in Docker's naming ("amd64", "arm64", "x86", ...), as `arches` uses it.
std::string native_docker_arch();
// major.minor of the running kernel (uname), as `minKernel` is compared with.
KernelVersion running_kernel();

// What the profile's `includes`/`excludes` are judged against.
struct ProfileContext {
  std::vector<std::string> capabilities{};  // the capabilities the sandbox keeps: "CAP_SYS_ADMIN"
  std::string arch = native_docker_arch();
  KernelVersion kernel = running_kernel();
};

// Throws sandcell::Error (input error) naming the profile, the JSON path and the entry index,
// e.g. "seccomp profile x.json: syscalls[12].args[0].op: unknown operator 'SCMP_CMP_FOO'".
Profile parse_docker_profile(const nlohmann::json& json, const std::string& name,
                             const ProfileContext& ctx);

// The argument of `sandcell run --seccomp`: "default" and "code" (the profiles shipped in
// seccomp/profiles/), "builtin" (builtin_profile()), "unconfined" (nullopt: no filter), or the
// path of a JSON profile.
std::optional<Profile> load_profile_arg(const std::string& arg, const ProfileContext& ctx);

// A shipped profile ("default", "code") as load_profile_arg reads it: the file in an installed
// tree or the source tree (base/shipped_data.hpp) when there is one, so an edited copy there
// overrides; else the copy compiled into this program (cmake/embed-files.cmake), so a binary
// copied alone to another machine keeps its defaults. `origin` names which, for errors.
struct ShippedProfile {
  std::string text;
  std::string origin;  // the file's path, or "compiled in"
};
ShippedProfile shipped_profile(const std::string& name);

}  // namespace sandcell::seccomp
