#include "commands.hpp"
#include "sandcell/rootfs_builder/store_root.hpp"

namespace sandcell::cli {

std::string GlobalOptions::store_root() const {
  return root.empty() ? rootfs_builder::default_store_root() : root;
}

}  // namespace sandcell::cli
