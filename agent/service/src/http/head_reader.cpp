#include "http/head_reader.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>

#include "sandcell/base/error.hpp"

namespace sandcell::agent_service {
namespace {

using HeadClock = std::chrono::steady_clock;

void send_now(int fd, std::string_view answer) {
  // Never blocks the reader: a client that does not read its answer simply misses it.
  (void)send(fd, answer.data(), answer.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
}

constexpr std::string_view kTooManyFromClient =
    "HTTP/1.1 429 Too Many Requests\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
constexpr std::string_view kHeadTooLarge =
    "HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";

}  // namespace

bool holds_whole_head(std::string_view bytes) {
  auto request_line_end = bytes.find('\n');
  return request_line_end != std::string_view::npos && bytes.find("\n\r\n", request_line_end) != std::string_view::npos;
}

HeadReader::HeadReader(const ConnectionBounds& bounds, std::function<void(ParkedConnection)> dispatch)
    : bounds_(bounds), dispatch_(std::move(dispatch)) {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) throw Error(errno, "epoll_create1 for request heads");
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) {
    int saved = errno;
    close(epoll_fd_);
    throw Error(saved, "eventfd for request heads");
  }
  epoll_event wake{.events = EPOLLIN, .data = {.fd = wake_fd_}};
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &wake);
  thread_ = std::thread([this] { loop(); });
}

HeadReader::~HeadReader() {
  stop();
  close(wake_fd_);
  close(epoll_fd_);
}

void HeadReader::park(ParkedConnection connection, Parking parking) {
  {
    std::lock_guard lock(inbox_mutex_);
    if (!stopped_) {
      inbox_.emplace_back(std::move(connection), parking);
      connection.fd = -1;
    }
  }
  if (connection.fd >= 0) {
    close(connection.fd);
    return;
  }
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof one);
}

void HeadReader::stop() {
  {
    std::lock_guard lock(inbox_mutex_);
    if (stopped_) return;
    stopped_ = true;
  }
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof one);
  thread_.join();
}

void HeadReader::loop() {
  std::array<epoll_event, 64> events{};
  for (;;) {
    int n = epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), wait_ms());
    for (int i = 0; i < n; ++i) {
      if (events[static_cast<size_t>(i)].data.fd == wake_fd_) {
        uint64_t count;
        (void)!read(wake_fd_, &count, sizeof count);
      } else {
        read_from(events[static_cast<size_t>(i)].data.fd);
      }
    }
    {
      std::lock_guard lock(inbox_mutex_);
      if (stopped_) break;
    }
    take_inbox();
    expire_overdue();
  }
  take_inbox();  // under stopped_: nothing more arrives
  while (!waiting_.empty()) drop(waiting_.begin()->first);
}

void HeadReader::take_inbox() {
  std::vector<std::pair<ParkedConnection, Parking>> arrived;
  {
    std::lock_guard lock(inbox_mutex_);
    arrived.swap(inbox_);
  }
  for (auto& [connection, parking] : arrived) admit(std::move(connection), parking);
}

HeadClock::time_point HeadReader::deadline_of(const ParkedConnection& connection, Parking parking) const {
  const auto now = HeadClock::now();
  if (parking == Parking::Linger) return now + bounds_.linger;
  if (!connection.client.empty() && heads_per_client_.contains(connection.client) &&
      heads_per_client_.at(connection.client) > bounds_.max_connections_per_client)
    return now + bounds_.crowded_head_timeout;
  if (parking == Parking::NextRequest) return now + std::min(bounds_.head_timeout, bounds_.keep_alive_timeout);
  return now + bounds_.head_timeout;
}

// Keeps the reader within its bounds (connections, bytes of unfinished heads) for `connections`
// and `bytes` more: the connections nearest their deadline go (the oldest heads, a crowded
// client's, lingering ones), since they are the ones with the least left to lose.
void HeadReader::make_room(size_t connections, size_t bytes) {
  while (!by_deadline_.empty() && (waiting_.size() + connections > bounds_.max_waiting_connections ||
                                   buffered_bytes_ + bytes > bounds_.max_waiting_head_bytes))
    drop(by_deadline_.begin()->second);
}

// Counts the connection against its client, sets its deadline, and makes room for it.
void HeadReader::admit(ParkedConnection connection, Parking parking) {
  const int fd = connection.fd;
  if (parking == Parking::Linger) {
    shutdown(fd, SHUT_WR);
  } else if (!connection.client.empty()) {
    int& heads = heads_per_client_[connection.client];
    if (heads >= 4 * bounds_.max_connections_per_client) {
      send_now(fd, kTooManyFromClient);
      close(fd);
      return;
    }
    ++heads;
  }
  make_room(1, connection.buffered.size());
  buffered_bytes_ += connection.buffered.size();
  Waiting& w = waiting_[fd] = Waiting{.connection = std::move(connection), .parking = parking, .deadline = {}};
  w.deadline = deadline_of(w.connection, parking);
  by_deadline_.emplace(w.deadline, fd);
  if (parking != Parking::Linger && holds_whole_head(w.connection.buffered)) return hand_on(fd);  // pipelined
  epoll_event readable{.events = EPOLLIN | EPOLLRDHUP, .data = {.fd = fd}};
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &readable) != 0) drop(fd);
}

void HeadReader::read_from(int fd) {
  auto it = waiting_.find(fd);
  if (it == waiting_.end()) return;
  Waiting& w = it->second;
  std::array<char, 4096> chunk;
  ssize_t n = recv(fd, chunk.data(), chunk.size(), MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  if (n <= 0) return drop(fd);
  if (w.parking == Parking::Linger) {
    if ((w.drained += static_cast<size_t>(n)) > bounds_.linger_bytes) drop(fd);
    return;
  }
  w.connection.buffered.append(chunk.data(), static_cast<size_t>(n));
  buffered_bytes_ += static_cast<size_t>(n);
  if (holds_whole_head(w.connection.buffered)) return hand_on(fd);
  if (w.connection.buffered.size() > bounds_.max_head_bytes) {
    send_now(fd, kHeadTooLarge);
    return drop(fd);
  }
  make_room(0, 0);  // may close this very connection
}

// Out of the reader and off to a worker, the socket still open.
void HeadReader::hand_on(int fd) {
  auto it = waiting_.find(fd);
  buffered_bytes_ -= it->second.connection.buffered.size();
  ParkedConnection connection = std::move(it->second.connection);
  by_deadline_.erase({it->second.deadline, fd});
  waiting_.erase(it);
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);  // ENOENT when it was complete on arrival
  if (!connection.client.empty() && --heads_per_client_[connection.client] <= 0) heads_per_client_.erase(connection.client);
  dispatch_(std::move(connection));
}

void HeadReader::drop(int fd) {
  auto it = waiting_.find(fd);
  const Waiting& w = it->second;
  buffered_bytes_ -= w.connection.buffered.size();
  if (w.parking != Parking::Linger && !w.connection.client.empty() && --heads_per_client_[w.connection.client] <= 0)
    heads_per_client_.erase(w.connection.client);
  by_deadline_.erase({w.deadline, fd});
  waiting_.erase(it);
  close(fd);  // also takes it out of the epoll set
}

void HeadReader::expire_overdue() {
  const auto now = HeadClock::now();
  while (!by_deadline_.empty() && by_deadline_.begin()->first <= now) drop(by_deadline_.begin()->second);
}

int HeadReader::wait_ms() const {
  if (by_deadline_.empty()) return -1;
  auto left = std::chrono::ceil<std::chrono::milliseconds>(by_deadline_.begin()->first - HeadClock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, 60'000));
}

}  // namespace sandcell::agent_service
