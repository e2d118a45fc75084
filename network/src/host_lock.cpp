// The lock file sits directly in /run (tmpfs, writable by root only, so nobody else can plant a
// symlink there), not in /run/lock: that directory is made by the distribution's boot scripts and
// is missing in containers, minimal roots and CI runners with a fresh tmpfs on /run. Not under
// the state root either: that one can be changed per run (SANDCELL_STATE), and the lock must be
// one for the whole host, as the nft table and the veth addresses are.
#include "host_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>

#include <cerrno>

#include "sandcell/base/error.hpp"

namespace sandcell::network {

constexpr const char* kLockFile = "/run/sandcell-network.lock";

namespace {

int open_lock_file() {
  const int fd = open(kLockFile, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0 && errno == ENOENT)
    throw Error(errno, std::string("open ") + kLockFile +
                           " (the host has no /run directory; the network policy needs one, "
                           "as a tmpfs or a plain directory writable by root)");
  return static_cast<int>(check(fd, std::string("open ") + kLockFile));
}

}  // namespace

HostNetworkLock::HostNetworkLock() : fd_(open_lock_file()) {
  while (flock(fd_.get(), LOCK_EX) < 0) {
    if (errno != EINTR) throw Error(errno, std::string("flock ") + kLockFile);
  }
}

}  // namespace sandcell::network
