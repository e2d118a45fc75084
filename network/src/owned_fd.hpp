#pragma once
// The runtime's owned file descriptor (public since it is shared by every library).
#include "sandcell/base/unique_fd.hpp"

namespace sandcell::network {
using OwnedFd = runtime::UniqueFd;
}  // namespace sandcell::network
