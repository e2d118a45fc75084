// Dockerfile text → parse_dockerfile (lexer, parser, heredocs, variable expansion, ARG/FROM).
#include <cstdint>
#include <string_view>

#include "sandcell/rootfs_builder/dockerfile.hpp"
#include "sandcell/runtime/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    auto dockerfile = sandcell::rootfs_builder::parse_dockerfile(text, "Dockerfile", {{"A", "1"}});
    (void)dockerfile.target_stage("base");
  } catch (const sandcell::Error& e) {
    if (!e.input_error()) __builtin_trap();  // bad text is an input error, never a system one
  }
  return 0;
}
