#pragma once
// errno names as the containers-common profile writes them ("EPERM").
#include <optional>
#include <string>

namespace sandcell::seccomp {

std::optional<int> errno_from_name(const std::string& name);

}  // namespace sandcell::seccomp
