// libFuzzer entry point; what the target checks is in service_targets.cpp (sandcell::fuzz::http_request).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sandcell::fuzz::http_request(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
