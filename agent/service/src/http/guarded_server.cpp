#include "http/guarded_server.hpp"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>

namespace sandcell::agent_service {
namespace {

using Clock = std::chrono::steady_clock;

// What one connection has read so far, seen by the handlers of its thread.
struct ConnectionState {
  bool in_head = true;
  Clock::time_point head_deadline{};
  size_t head_bytes = 0, body_bytes = 0;
  bool close_after = false, body_too_large = false;
};

thread_local ConnectionState* current = nullptr;

// Waits until `fd` is ready for `events`, at most `timeout`; false on timeout or error.
bool wait_for(int fd, short events, std::chrono::milliseconds timeout) {
  pollfd p{.fd = fd, .events = events, .revents = 0};
  int ms = static_cast<int>(std::max<int64_t>(0, timeout.count()));
  int n;
  do n = poll(&p, 1, ms);
  while (n < 0 && errno == EINTR);
  return n > 0;
}

std::pair<std::string, int> address_of(const sockaddr_storage& addr, socklen_t len) {
  if (addr.ss_family != AF_INET && addr.ss_family != AF_INET6) return {"", 0};
  std::array<char, NI_MAXHOST> host{};
  std::array<char, NI_MAXSERV> port{};
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, host.data(), host.size(),
                  port.data(), port.size(), NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return {"", 0};
  return {host.data(), std::atoi(port.data())};
}

std::pair<std::string, int> peer_of(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return {"", 0};
  return address_of(addr, len);
}

// httplib::Stream over a connected socket, with the head deadline and the size bounds.
class BoundedStream final : public httplib::Stream {
 public:
  BoundedStream(int fd, ConnectionState& state, const ConnectionBounds& bounds,
                std::chrono::milliseconds io_timeout)
      : fd_(fd), state_(state), bounds_(bounds), io_timeout_(io_timeout) {}

  bool is_readable() const override { return buffered_ > 0 || wait_for(fd_, POLLIN, read_wait()); }
  bool is_writable() const override { return wait_for(fd_, POLLOUT, io_timeout_); }

  ssize_t read(char* ptr, size_t size) override {
    if (buffered_ == 0 && !fill()) return -1;
    size_t n = std::min(size, buffered_);
    std::copy_n(buffer_.data() + start_, n, ptr);
    start_ += n;
    buffered_ -= n;
    return count(n) ? static_cast<ssize_t>(n) : -1;
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!wait_for(fd_, POLLOUT, io_timeout_)) return -1;
    ssize_t n;
    do n = send(fd_, ptr, size, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    std::tie(ip, port) = peer_of(fd_);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
      std::tie(ip, port) = address_of(addr, len);
  }
  socket_t socket() const override { return fd_; }
  // Bytes of a pipelined next request already read from the socket.
  bool has_buffered() const { return buffered_ > 0; }

 private:
  std::chrono::milliseconds read_wait() const {
    if (!state_.in_head) return io_timeout_;
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(state_.head_deadline - Clock::now());
    return std::min(io_timeout_, left);
  }

  bool fill() {
    if (state_.in_head && Clock::now() >= state_.head_deadline) {
      state_.close_after = true;  // whatever httplib answers, this client is done
      return false;
    }
    if (!wait_for(fd_, POLLIN, read_wait())) return false;
    ssize_t n;
    do n = recv(fd_, buffer_.data(), buffer_.size(), 0);
    while (n < 0 && errno == EINTR);
    if (n <= 0) return false;
    start_ = 0;
    buffered_ = static_cast<size_t>(n);
    return true;
  }

  // Bytes handed to httplib: the head's against its bound, the body's against the body's.
  bool count(size_t n) {
    if (state_.in_head) {
      if ((state_.head_bytes += n) <= bounds_.max_head_bytes) return true;
      state_.close_after = true;
      return false;
    }
    state_.body_bytes += n;
    if (state_.body_bytes <= bounds_.max_body_bytes + bounds_.max_body_bytes / 8 + 4096)
      return true;
    state_.body_too_large = true;
    state_.close_after = true;
    return false;
  }

  int fd_;
  ConnectionState& state_;
  const ConnectionBounds& bounds_;
  std::chrono::milliseconds io_timeout_;
  std::array<char, 4096> buffer_{};
  size_t start_ = 0, buffered_ = 0;
};

// An answer sent before the body was read: shut our side, then read (and drop) what the client
// still sends for a moment, so that closing does not reset the connection before it has read
// the answer. Bounded in time and bytes.
void close_after_early_answer(int fd) {
  shutdown(fd, SHUT_WR);
  std::array<char, 4096> sink{};
  auto until = Clock::now() + std::chrono::seconds(1);
  for (size_t drained = 0; drained < (1u << 20) && Clock::now() < until;) {
    if (!wait_for(fd, POLLIN,
                  std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now())))
      break;
    ssize_t n = recv(fd, sink.data(), sink.size(), 0);
    if (n <= 0) break;
    drained += static_cast<size_t>(n);
  }
}

}  // namespace

void GuardedServer::close_after_answer() {
  if (current) current->close_after = true;
}

bool GuardedServer::body_over_limit() {
  return current && current->body_too_large;
}

GuardedServer::HeadSlot GuardedServer::enter_head(const std::string& client) {
  if (client.empty()) return HeadSlot::Normal;  // a unix socket: its mode is the guard
  std::lock_guard lock(clients_mutex_);
  int& waiting = clients_[client];
  if (waiting >= 4 * bounds_.max_connections_per_client) return HeadSlot::Refused;
  return ++waiting > bounds_.max_connections_per_client ? HeadSlot::Crowded : HeadSlot::Normal;
}

void GuardedServer::leave_head(const std::string& client) {
  if (client.empty()) return;
  std::lock_guard lock(clients_mutex_);
  if (--clients_[client] <= 0) clients_.erase(client);
}

// httplib's keep-alive loop (process_server_socket_core), with a deadline from the moment a
// connection starts waiting for a request to the end of its head, counted per client.
void GuardedServer::serve_connection(socket_t sock, const std::string& client) {
  ConnectionState state;
  current = &state;
  const auto io_timeout =
      std::chrono::seconds(read_timeout_sec_) + std::chrono::microseconds(read_timeout_usec_);
  BoundedStream stream(sock, state, bounds_,
                       std::chrono::duration_cast<std::chrono::milliseconds>(io_timeout));
  for (size_t left = keep_alive_max_count_; left > 0 && svr_sock_ != INVALID_SOCKET; --left) {
    HeadSlot slot = enter_head(client);
    if (slot == HeadSlot::Refused) {
      static constexpr std::string_view kRefused =
          "HTTP/1.1 429 Too Many Requests\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
      (void)send(sock, kRefused.data(), kRefused.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      break;
    }
    const auto timeout =
        slot == HeadSlot::Normal ? bounds_.head_timeout : bounds_.crowded_head_timeout;
    state = ConnectionState{.head_deadline = Clock::now() + timeout};
    const auto idle =
        std::min<std::chrono::milliseconds>(timeout, std::chrono::seconds(keep_alive_timeout_sec_));
    bool ok = false, connection_closed = false;
    if (stream.has_buffered() || wait_for(sock, POLLIN, idle))
      ok =
          process_request(stream, left == 1, connection_closed, [this, &client](httplib::Request&) {
            current->in_head = false;  // called once the headers are read, before any body byte
            leave_head(client);
          });
    if (state.in_head) leave_head(client);  // the head never came
    if (state.close_after) {
      close_after_early_answer(sock);
      break;
    }
    if (!ok || connection_closed) break;
  }
  current = nullptr;
}

bool GuardedServer::process_and_close_socket(socket_t sock) {
  serve_connection(sock, peer_of(sock).first);
  shutdown(sock, SHUT_RDWR);
  close(sock);
  return true;
}

}  // namespace sandcell::agent_service
