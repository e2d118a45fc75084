// The lock file lives in /run/lock (tmpfs, root-only writable), not under /run/sandcell, which
// holds per-run state only.
#include "host_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>

#include <cerrno>

#include "sandcell/runtime/error.hpp"

namespace sandcell::network {

constexpr const char* kLockFile = "/run/lock/sandcell-network.lock";

HostNetworkLock::HostNetworkLock()
    : fd_(static_cast<int>(check(open(kLockFile, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600),
                                 std::string("open ") + kLockFile))) {
  while (flock(fd_.get(), LOCK_EX) < 0) {
    if (errno != EINTR) throw Error(errno, std::string("flock ") + kLockFile);
  }
}

}  // namespace sandcell::network
