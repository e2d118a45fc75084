#pragma once
#include "sandcell/base/unique_fd.hpp"

namespace sandcell::rootfs_builder {
using runtime::UniqueFd;
}  // namespace sandcell::rootfs_builder
