#pragma once
// Unix sockets at paths that may exceed sun_path (108 bytes): the directory is reached through
// /proc/self/fd/<dirfd>, so only the last component has to fit.
#include <string>

#include "sandcell/base/unique_fd.hpp"

namespace sandcell::oci {

runtime::UniqueFd listen_unix(const std::string& path);   // SOCK_SEQPACKET, backlog 1
// SOCK_STREAM for console sockets, SOCK_SEQPACKET for the start socket.
runtime::UniqueFd connect_unix(const std::string& path, int type);

}  // namespace sandcell::oci
