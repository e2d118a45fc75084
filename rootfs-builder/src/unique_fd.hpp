#pragma once
#include "sandcell/runtime/unique_fd.hpp"

namespace sandcell::rootfs_builder {
using runtime::UniqueFd;
}  // namespace sandcell::rootfs_builder
