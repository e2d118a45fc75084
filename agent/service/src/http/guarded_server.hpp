#pragma once
// cpp-httplib's server with the connection handling sandcell needs in front of any handler
// (httplib 0.11 has none of it): request heads read apart from the worker threads (HeadReader),
// with a deadline and a size bound, a cap on connections per client address, request bodies
// bounded on the wire whatever their framing (chunked too), and the connection closed after an
// early answer (401, 413) instead of reading the unread body as the next request (request
// smuggling behind a proxy).
#include <httplib.h>

#include <chrono>
#include <memory>
#include <string>

namespace sandcell::agent_service {

struct ConnectionBounds {
  // From a connection waiting for a request to the end of its head: a client sending one byte
  // a second is closed then. No worker thread waits for it meanwhile.
  std::chrono::milliseconds head_timeout{10000};
  std::chrono::milliseconds keep_alive_timeout{5000};  // between requests, if shorter
  size_t max_head_bytes = 64 << 10;
  // Connections of one source address (TCP) waiting for a request head: this many get the
  // head_timeout; beyond it they get crowded_head_timeout (a prompt client in a burst is still
  // served); from 4 times this many on, new ones are answered 429 and closed at once.
  int max_connections_per_client = 16;
  std::chrono::milliseconds crowded_head_timeout{1000};
  // All connections waiting for a head or lingering, whatever their address; a new one beyond
  // this closes the one nearest its deadline. Kept well under the descriptor limit, so that
  // accept() never fails for an authenticated client.
  size_t max_waiting_connections = 4096;
  // And the bytes of unfinished heads they hold together (each is below max_head_bytes).
  size_t max_waiting_head_bytes = 16u << 20;
  // After an early answer: how long and how much of the unread request is drained before
  // closing, so that the client reads the answer rather than a reset.
  std::chrono::milliseconds linger{1000};
  size_t linger_bytes = 1u << 20;
  size_t max_body_bytes = 32u << 20;  // decoded; on the wire at most 1/8 more (chunk framing)
};

struct ParkedConnection;
class HeadReader;

class GuardedServer : public httplib::Server {
 public:
  // `workers` threads run requests whose head is complete; none ever waits for a head.
  GuardedServer(ConnectionBounds bounds, size_t workers);
  ~GuardedServer() override;

  // For a handler, on the connection's own thread: close the connection after this answer.
  static void close_after_answer();
  // For the error handler: the body was cut off because it went over max_body_bytes.
  static bool body_over_limit();

 private:
  class ServingQueue;

  // httplib's accept loop hands every accepted socket here: it goes to the head reader.
  bool process_and_close_socket(socket_t sock) override;
  // On a worker: one request, then the connection goes back to the reader (or is closed).
  void serve_request(ParkedConnection connection);

  ConnectionBounds bounds_;
  size_t workers_;
  ServingQueue* serving_ = nullptr;  // while listening
};

}  // namespace sandcell::agent_service
