// libFuzzer entry point; what the target checks is in targets.cpp (sandcell::fuzz::allowlist).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sandcell::fuzz::allowlist(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
