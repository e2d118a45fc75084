#include "sandcell/rootfs_builder/store_root.hpp"

#include <unistd.h>

#include <cstdlib>

#include "sandcell/runtime/rootless.hpp"

namespace sandcell::rootfs_builder {

std::string default_store_root() {
  if (const char* env = std::getenv("SANDCELL_ROOT"); env != nullptr && *env != '\0') return env;
  if (!runtime::rootless()) return "/var/lib/sandcell";
  if (const char* data = std::getenv("XDG_DATA_HOME"); data != nullptr && *data != '\0')
    return std::string(data) + "/sandcell";
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : "/tmp") + "/.local/share/sandcell";
}

}  // namespace sandcell::rootfs_builder
