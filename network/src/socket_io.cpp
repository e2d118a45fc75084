// The proxy's socket I/O (see socket_io.hpp).
#include "socket_io.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <span>

namespace sandcell::network {
namespace {

// Waits for `events` on fd. False on timeout, stop or poll error.
bool wait_for(int fd, short events, int stop_fd, std::chrono::milliseconds timeout) {
  pollfd fds[2] = {{.fd = fd, .events = events, .revents = 0},
                   {.fd = stop_fd, .events = POLLIN, .revents = 0}};
  while (true) {
    const int n = poll(fds, stop_fd >= 0 ? 2 : 1, static_cast<int>(timeout.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || (fds[1].revents & POLLIN)) return false;
    return true;
  }
}

// One direction of a tunnel: bytes read from `from` waiting to be written to `to`.
struct Direction {
  int from = -1;
  int to = -1;
  std::array<char, 64 * 1024> buffer{};
  size_t start = 0;
  size_t end = 0;
  bool eof = false;
  bool done() const { return eof && start == end; }
};

// Reads or writes what poll said is ready. False when the connection is broken.
bool step(Direction& d, short from_events, short to_events) {
  if (d.start == d.end && !d.eof && (from_events & (POLLIN | POLLHUP | POLLERR))) {
    const ssize_t n = recv(d.from, d.buffer.data(), d.buffer.size(), 0);
    if (n < 0 && errno != EAGAIN && errno != EINTR) return false;
    if (n == 0) {
      d.eof = true;
      shutdown(d.to, SHUT_WR);
    }
    if (n > 0) {
      d.start = 0;
      d.end = static_cast<size_t>(n);
    }
  }
  if (d.start < d.end && (to_events & (POLLOUT | POLLERR | POLLHUP))) {
    const ssize_t n = send(d.to, d.buffer.data() + d.start, d.end - d.start, MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN && errno != EINTR) return false;
    if (n > 0) d.start += static_cast<size_t>(n);
    if (d.start == d.end && d.eof) shutdown(d.to, SHUT_WR);
  }
  return true;
}

short wanted(const Direction& d, int fd) {
  short events = 0;
  if (fd == d.from && d.start == d.end && !d.eof) events |= POLLIN;
  if (fd == d.to && d.start < d.end) events |= POLLOUT;
  return events;
}

void pump(std::span<Direction*> directions, int a, int b, const IoLimits& limits) {
  while (true) {
    bool all_done = true;
    for (auto* d : directions) all_done = all_done && d->done();
    if (all_done) return;
    pollfd fds[3] = {{.fd = a, .events = 0, .revents = 0},
                     {.fd = b, .events = 0, .revents = 0},
                     {.fd = limits.stop_fd, .events = POLLIN, .revents = 0}};
    for (auto* d : directions) {
      fds[0].events |= wanted(*d, a);
      fds[1].events |= wanted(*d, b);
    }
    const int n = poll(fds, 3, static_cast<int>(limits.idle.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || (fds[2].revents & POLLIN)) return;  // error, idle timeout or stop
    for (auto* d : directions) {
      const short from = d->from == a ? fds[0].revents : fds[1].revents;
      const short to = d->to == a ? fds[0].revents : fds[1].revents;
      if (!step(*d, from, to)) return;
    }
  }
}

}  // namespace

std::optional<size_t> receive_some(int fd, char* buffer, size_t size, const IoLimits& limits) {
  while (true) {
    const ssize_t n = recv(fd, buffer, size, 0);
    if (n >= 0) return static_cast<size_t>(n);
    if (errno != EAGAIN && errno != EINTR) return std::nullopt;
    if (!wait_for(fd, POLLIN, limits.stop_fd, limits.idle)) return std::nullopt;
  }
}

bool send_all(int fd, std::string_view data, const IoLimits& limits) {
  while (!data.empty()) {
    const ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR) return false;
    if (!wait_for(fd, POLLOUT, limits.stop_fd, limits.idle)) return false;
  }
  return true;
}

int connect_to(const IpAddress& address, uint16_t port, std::chrono::milliseconds timeout,
               int stop_fd) {
  sockaddr_storage storage{};
  socklen_t length = 0;
  if (address.family == AF_INET) {
    auto* sin = reinterpret_cast<sockaddr_in*>(&storage);
    sin->sin_family = AF_INET;
    sin->sin_port = htons(port);
    std::memcpy(&sin->sin_addr, address.bytes.data(), 4);
    length = sizeof(sockaddr_in);
  } else {
    auto* sin6 = reinterpret_cast<sockaddr_in6*>(&storage);
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(port);
    std::memcpy(&sin6->sin6_addr, address.bytes.data(), 16);
    length = sizeof(sockaddr_in6);
  }
  const int fd = socket(address.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (connect(fd, reinterpret_cast<sockaddr*>(&storage), length) == 0) return fd;
  int err = errno;
  if (err == EINPROGRESS) {
    socklen_t size = sizeof err;
    err = wait_for(fd, POLLOUT, stop_fd, timeout) ? 0 : ETIMEDOUT;
    if (err == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &size) < 0) err = errno;
    if (err == 0) return fd;
  }
  close(fd);
  errno = err;
  return -1;
}

void relay(int client, int upstream, const IoLimits& limits) {
  Direction up{.from = client, .to = upstream};
  Direction down{.from = upstream, .to = client};
  Direction* both[] = {&up, &down};
  pump(both, client, upstream, limits);
}

void relay_response(int upstream, int client, const IoLimits& limits) {
  Direction down{.from = upstream, .to = client};
  Direction* one[] = {&down};
  pump(one, upstream, client, limits);
}

}  // namespace sandcell::network
