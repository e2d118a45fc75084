// Host names and allowlists as users and sandboxes write them → normalise_host (IDNA, IP
// literals in every inet_aton form) and Allowlist::parse. Checks one property besides "no
// crash": a normalised name normalises to itself.
#include <cstdint>
#include <string_view>

#include "sandcell/network/host_policy.hpp"
#include "sandcell/runtime/error.hpp"

using namespace sandcell::network;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    NormalisedHost once = normalise_host(text);
    NormalisedHost twice = normalise_host(once.name);
    if (twice.name != once.name || twice.ip_literal != once.ip_literal) __builtin_trap();
  } catch (const sandcell::Error&) {
  }
  try {
    Allowlist list = Allowlist::parse(text);
    for (const auto& entry : list.entries()) {
      if (entry.rfind("*.", 0) == 0) continue;
      if (!list.allows(normalise_host(entry))) __builtin_trap();  // an entry allows itself
    }
  } catch (const sandcell::Error&) {
  }
  return 0;
}
