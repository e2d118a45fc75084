#pragma once
// Passing fds over a unix socket (SCM_RIGHTS), the one way the runtime does it: "go" and the
// idmapped layers from the supervisor to the child, the seccomp and proxy listeners from the
// child to the supervisor, a container's pty master to --console-socket. No allocation: the
// child calls it between clone and execve.
#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <span>

namespace sandcell::runtime {

// The most fds one message carries: the idmapped layers of the deepest image
// (kMaxIdmappedLayers, child_plan.hpp).
constexpr size_t kMaxPassedFds = 128;

// sendmsg(MSG_NOSIGNAL) of `data` with `fds` attached (none: a plain message). Returns what
// sendmsg returns, errno set on failure (E2BIG for more than kMaxPassedFds fds).
ssize_t send_with_fds(int socket, std::span<const iovec> data, std::span<const int> fds);

// recvmsg of one message into `data` (`size` bytes) with at most one fd attached, which lands in
// `*fd` (close-on-exec; -1 when none came; any more are closed by the kernel). `flags`: recvmsg's
// (MSG_DONTWAIT, say). Returns what recvmsg returns, errno set on failure.
ssize_t receive_with_fd(int socket, void* data, size_t size, int flags, int* fd);

}  // namespace sandcell::runtime
