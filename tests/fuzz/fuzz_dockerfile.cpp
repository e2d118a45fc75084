// Dockerfile text → parse_dockerfile. libFuzzer entry point; the checks are in targets.cpp.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sandcell::fuzz::dockerfile(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
