#include "http/guarded_server.hpp"

#include <netdb.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>

#include "http/head_reader.hpp"

namespace sandcell::agent_service {
namespace {

// What one request has read so far, seen by the handlers of its thread.
struct ConnectionState {
  bool in_head = true;
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

// httplib::Stream over a connected socket whose request head is already read (HeadReader), with
// the size bounds. It never waits for more of the head: httplib asking for it is a broken head.
class BoundedStream final : public httplib::Stream {
 public:
  BoundedStream(int fd, std::string head, ConnectionState& state, const ConnectionBounds& bounds,
                std::chrono::milliseconds io_timeout)
      : fd_(fd), state_(state), bounds_(bounds), io_timeout_(io_timeout), buffer_(std::move(head)) {}

  bool is_readable() const override { return buffered() > 0 || (!state_.in_head && wait_for(fd_, POLLIN, io_timeout_)); }
  bool is_writable() const override { return wait_for(fd_, POLLOUT, io_timeout_); }

  ssize_t read(char* ptr, size_t size) override {
    if (buffered() == 0 && !fill()) return -1;
    size_t n = std::min(size, buffered());
    std::copy_n(buffer_.data() + start_, n, ptr);
    start_ += n;
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
  std::string take_buffered() { return buffer_.substr(start_); }

 private:
  size_t buffered() const { return buffer_.size() - start_; }

  bool fill() {
    if (state_.in_head) {
      state_.close_after = true;  // the head HeadReader saw complete is not one for httplib
      return false;
    }
    if (!wait_for(fd_, POLLIN, io_timeout_)) return false;
    buffer_.resize(16 << 10);
    ssize_t n;
    do n = recv(fd_, buffer_.data(), buffer_.size(), 0);
    while (n < 0 && errno == EINTR);
    buffer_.resize(static_cast<size_t>(std::max<ssize_t>(n, 0)));
    start_ = 0;
    return n > 0;
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
  std::string buffer_;
  size_t start_ = 0;
};

// The descriptor limit, less room for the workers, their sandboxes' pipes and the listening
// socket: waiting connections beyond it would make accept() fail for everyone (EMFILE).
size_t waiting_connections_within_fd_limit(size_t wanted) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return wanted;
  return std::clamp<size_t>(static_cast<size_t>(limit.rlim_cur) / 2, 16, wanted);
}

}  // namespace

// httplib's task queue for accepted sockets: each is parked in the head reader at once, on the
// accept thread; the workers serve only requests whose head is complete. Its shutdown (httplib
// calls it after stop()) closes what waits for a head and lets running requests finish.
class GuardedServer::ServingQueue final : public httplib::TaskQueue {
 public:
  ServingQueue(GuardedServer& server, ConnectionBounds bounds, size_t workers)
      : server_(server), workers_(workers), reader_(bounds, [this](ParkedConnection connection) {
          workers_.enqueue([this, connection = std::move(connection)] { server_.serve_request(connection); });
        }) {
    server_.serving_ = this;
  }
  ~ServingQueue() override { server_.serving_ = nullptr; }

  void enqueue(std::function<void()> accepted) override { accepted(); }  // process_and_close_socket
  void shutdown() override {
    reader_.stop();
    workers_.shutdown();
  }
  void park(ParkedConnection connection, Parking parking) { reader_.park(std::move(connection), parking); }

 private:
  GuardedServer& server_;
  httplib::ThreadPool workers_;
  HeadReader reader_;  // after workers_: destroyed first, and stopped before the workers end
};

GuardedServer::GuardedServer(ConnectionBounds bounds, size_t workers) : bounds_(bounds), workers_(workers) {
  bounds_.max_waiting_connections = waiting_connections_within_fd_limit(bounds_.max_waiting_connections);
  bounds_.keep_alive_timeout = std::chrono::seconds(keep_alive_timeout_sec_);
  new_task_queue = [this] { return new ServingQueue(*this, bounds_, workers_); };
}

GuardedServer::~GuardedServer() = default;

void GuardedServer::close_after_answer() {
  if (current) current->close_after = true;
}

bool GuardedServer::body_over_limit() {
  return current && current->body_too_large;
}

bool GuardedServer::process_and_close_socket(socket_t sock) {
  serving_->park({.fd = sock, .client = peer_of(sock).first, .buffered = {}, .requests_left = keep_alive_max_count_},
                 Parking::NewConnection);
  return true;
}

// httplib's process_request on a head that is all in memory; the body, if any, is read here
// (the pre-routing guard has refused the requests without the token before any body byte).
void GuardedServer::serve_request(ParkedConnection connection) {
  ConnectionState state;
  current = &state;
  const auto io_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::seconds(read_timeout_sec_) + std::chrono::microseconds(read_timeout_usec_));
  BoundedStream stream(connection.fd, std::move(connection.buffered), state, bounds_, io_timeout);
  bool connection_closed = false;
  const bool ok = process_request(stream, connection.requests_left <= 1, connection_closed,
                                  [](httplib::Request&) { current->in_head = false; });
  current = nullptr;
  if (state.close_after) {
    connection.buffered.clear();  // what it sent after the early answer is only drained
    return serving_->park(std::move(connection), Parking::Linger);
  }
  if (!ok || connection_closed || --connection.requests_left == 0 || svr_sock_ == INVALID_SOCKET) {
    shutdown(connection.fd, SHUT_RDWR);
    close(connection.fd);
    return;
  }
  connection.buffered = stream.take_buffered();
  serving_->park(std::move(connection), Parking::NextRequest);
}

}  // namespace sandcell::agent_service
