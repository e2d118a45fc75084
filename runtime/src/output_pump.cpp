#include "output_pump.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace sandcell::runtime {

bool OutputPump::drain() {
  char buffer[65536];
  // Bounded rounds per call so one flooding stream cannot starve the deadlines.
  for (int round = 0; round < 16 && open(); ++round) {
    ssize_t n = read(fd_.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return false;
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    uint64_t room = total_ < cap_ ? cap_ - total_ : 0;
    uint64_t forward = std::min<uint64_t>(room, static_cast<uint64_t>(n));
    if (forward > 0) sink_(stream_, std::span<const char>(buffer, forward));
    total_ += static_cast<uint64_t>(n);
  }
  return open();
}

}  // namespace sandcell::runtime
