// Image metadata from a registry or an archive → the OCI image config and manifest readers, and
// image references as users type them. The first byte picks the reader.
#include <cstdint>
#include <string_view>

#include "sandcell/rootfs_builder/image.hpp"
#include "sandcell/runtime/error.hpp"

using namespace sandcell::rootfs_builder;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    switch (data[0] % 3) {
      case 0: (void)config_to_json(config_from_json(text)); break;
      case 1: (void)manifest_to_json(manifest_from_json(text)); break;
      default: (void)parse_reference(text); break;
    }
  } catch (const sandcell::Error&) {
  }
  return 0;
}
