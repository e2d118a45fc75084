#pragma once
// The connections of `serve` that are not running a request: waiting for a request head (a new
// connection, or a kept-alive one between requests), or lingering after an early answer. One
// thread reads them all from one epoll set, without blocking, so that however many sockets sit
// idle or trickle bytes, none holds a worker thread: a worker only ever gets a connection whose
// whole request head is already in memory, and httplib parses that head there at once.
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "http/guarded_server.hpp"

namespace sandcell::agent_service {

// A connection between two requests.
struct ParkedConnection {
  int fd = -1;
  std::string client;       // source address; empty for a unix socket
  std::string buffered;     // bytes read from the socket and not yet handed to httplib
  size_t requests_left = 0;  // keep-alive: requests this connection may still make
};

enum class Parking {
  NewConnection,  // the head deadline from now
  NextRequest,    // kept alive: the head deadline, or the keep-alive timeout if shorter
  Linger,         // answered early: our side shut, its unread bytes drained for a moment, closed
};

class HeadReader {
 public:
  // `dispatch` gets each connection whose request head is complete, on the reader's thread: it
  // must only hand it on.
  HeadReader(const ConnectionBounds& bounds, std::function<void(ParkedConnection)> dispatch);
  ~HeadReader();
  HeadReader(const HeadReader&) = delete;
  HeadReader& operator=(const HeadReader&) = delete;

  // Takes the connection over, from any thread; after stop() it is closed at once.
  void park(ParkedConnection connection, Parking parking);
  // Closes every connection it holds; returns when its thread has ended.
  void stop();

 private:
  struct Waiting {
    ParkedConnection connection;
    Parking parking;
    std::chrono::steady_clock::time_point deadline;
    size_t drained = 0;  // Linger: bytes read and dropped
  };

  void loop();
  void take_inbox();
  void admit(ParkedConnection connection, Parking parking);
  std::chrono::steady_clock::time_point deadline_of(const ParkedConnection& connection, Parking parking) const;
  void read_from(int fd);
  void hand_on(int fd);
  void drop(int fd);
  void expire_overdue();
  void make_room(size_t connections, size_t bytes);
  int wait_ms() const;

  const ConnectionBounds bounds_;
  const std::function<void(ParkedConnection)> dispatch_;
  int epoll_fd_ = -1, wake_fd_ = -1;

  std::mutex inbox_mutex_;  // guards inbox_ and stopped_; all else belongs to the thread
  std::vector<std::pair<ParkedConnection, Parking>> inbox_;
  bool stopped_ = false;

  std::unordered_map<int, Waiting> waiting_;
  std::set<std::pair<std::chrono::steady_clock::time_point, int>> by_deadline_;
  std::map<std::string, int> heads_per_client_;  // connections waiting for a head, per address
  size_t buffered_bytes_ = 0;                    // of all waiting connections
  std::thread thread_;
};

// httplib reads a request line, then header lines until the first line that is exactly CRLF
// (without CPPHTTPLIB_ALLOW_LF_AS_LINE_TERMINATOR a bare LF line is skipped): true when
// `bytes` hold that much, so that httplib will not need to read from the socket for the head.
bool holds_whole_head(std::string_view bytes);

}  // namespace sandcell::agent_service
