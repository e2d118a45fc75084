#pragma once
// cpp-httplib's server with the connection handling sandcell needs in front of any handler
// (httplib 0.11 has none of it): a deadline for the whole request head, a bound on its size, a
// cap on connections per client address, request bodies bounded on the wire whatever their
// framing (chunked too), and the connection closed after an early answer (401, 413) instead of
// reading the unread body as the next request (request smuggling behind a proxy).
#include <httplib.h>

#include <chrono>
#include <map>
#include <mutex>
#include <string>

namespace sandcell::agent_service {

struct ConnectionBounds {
  // From the first byte of a request to the end of its headers: a client sending one byte a
  // second must not hold a worker thread for longer.
  std::chrono::milliseconds head_timeout{10000};
  size_t max_head_bytes = 64 << 10;
  // Connections of one source address (TCP) waiting for a request head: this many get the
  // head_timeout; beyond it they get crowded_head_timeout (a prompt client in a burst is still
  // served); from 4 times this many on, new ones are answered 429 and closed at once.
  int max_connections_per_client = 16;
  std::chrono::milliseconds crowded_head_timeout{1000};
  size_t max_body_bytes = 32u << 20;  // decoded; on the wire at most 1/8 more (chunk framing)
};

class GuardedServer : public httplib::Server {
 public:
  explicit GuardedServer(ConnectionBounds bounds) : bounds_(bounds) {}

  // For a handler, on the connection's own thread: close the connection after this answer.
  static void close_after_answer();
  // For the error handler: the body was cut off because it went over max_body_bytes.
  static bool body_over_limit();

 private:
  enum class HeadSlot { Normal, Crowded, Refused };

  bool process_and_close_socket(socket_t sock) override;
  HeadSlot enter_head(const std::string& client);
  void leave_head(const std::string& client);
  void serve_connection(socket_t sock, const std::string& client);

  ConnectionBounds bounds_;
  std::mutex clients_mutex_;
  std::map<std::string, int> clients_;  // connections waiting for a head, per source address
};

}  // namespace sandcell::agent_service
