#include "sandcell/rootfs_builder/store_root.hpp"

#include <unistd.h>

#include <cstdlib>

#include "sandcell/base/error.hpp"
#include "sandcell/base/rootless.hpp"

namespace sandcell::rootfs_builder {

std::string default_store_root() {
  if (const char* env = std::getenv("SANDCELL_ROOT"); env != nullptr && *env != '\0') return env;
  if (!runtime::rootless()) return "/var/lib/sandcell";
  if (const char* data = std::getenv("XDG_DATA_HOME"); data != nullptr && *data == '/')
    return std::string(data) + "/sandcell";
  const char* home = std::getenv("HOME");
  // Never a store in a shared /tmp: another user could plant the layers this user then runs.
  if (home == nullptr || *home != '/')
    throw Error::invalid(
        "no image store: without root, the store lives under $XDG_DATA_HOME or $HOME, and "
        "neither is set; give one with --root DIR or SANDCELL_ROOT");
  return std::string(home) + "/.local/share/sandcell";
}

}  // namespace sandcell::rootfs_builder
