#pragma once
// Reads an open file to its end in 64 KiB chunks, retrying EINTR; `consume` gets each chunk.
// The one read loop behind hashing, tar writing and bundling.
#include <unistd.h>

#include <array>
#include <cerrno>
#include <string>

#include "sandcell/base/error.hpp"

namespace sandcell::rootfs_builder {

template <typename Consume>
void for_each_chunk(int fd, const std::string& path, Consume&& consume) {
  std::array<char, 1 << 16> buf{};
  for (;;) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(errno, "read " + path);
    if (n == 0) return;
    consume(buf.data(), static_cast<size_t>(n));
  }
}

}  // namespace sandcell::rootfs_builder
