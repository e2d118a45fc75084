// A seccomp profile in Docker's JSON schema → parse_docker_profile → compile (libseccomp BPF),
// the path `sandcell run --seccomp FILE` and OCI configs take.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "sandcell/runtime/error.hpp"
#include "sandcell/seccomp/docker_profile.hpp"
#include "sandcell/seccomp/profile.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto json = nlohmann::json::parse(text, nullptr, false);
  if (json.is_discarded()) return 0;
  static const sandcell::seccomp::ProfileContext context{
      .capabilities = {"CAP_NET_RAW"}, .arch = "amd64", .kernel = {6, 1}};
  try {
    auto profile = sandcell::seccomp::parse_docker_profile(json, "fuzz.json", context);
    (void)sandcell::seccomp::compile(profile);
  } catch (const sandcell::Error&) {
    // Refused with a message naming the field: the expected answer to a bad profile.
  }
  return 0;
}
