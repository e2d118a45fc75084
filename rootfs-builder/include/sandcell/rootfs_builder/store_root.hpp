#pragma once
#include <string>

namespace sandcell::rootfs_builder {

// --root DIR, else $SANDCELL_ROOT, else /var/lib/sandcell as root, $XDG_DATA_HOME/sandcell
// (~/.local/share/sandcell) otherwise, also inside the user namespace of rootless mode. See
// docs/architecture.md "Image store".
std::string default_store_root();

}  // namespace sandcell::rootfs_builder
