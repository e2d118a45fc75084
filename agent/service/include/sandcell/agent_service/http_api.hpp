#pragma once
// sandcell over HTTP (cpp-httplib): POST /v1/run (JSON, or NDJSON events with "stream": true),
// sessions, session files, skills, health. A bearer token guards TCP; a concurrency gate runs
// `max_running` executions at once, queues `max_queued` more and answers 429 beyond that.
#include <cstddef>
#include <memory>
#include <string>

#include "sandcell/agent_service/executor.hpp"

namespace sandcell::agent_service {

struct HttpApiOptions {
  std::string listen{};  // "HOST:PORT" (port 0: any free port) or "unix:PATH"
  std::string token{};   // required for TCP; ignored on a unix socket (its mode 0600 guards it)
  int max_running = 2;
  int max_queued = 64;
  size_t max_body_bytes = 32u << 20;   // decoded, whatever the framing (chunked too)
  // Slow clients: a request's head must arrive within head_timeout_seconds of the connection
  // waiting for it. One source address may have max_connections_per_client connections waiting
  // so; beyond that each gets 1 s, and from 4 times that on new ones get 429. Heads are read on
  // one event loop apart from the worker threads (running + queued + 4), which only ever get a
  // complete request: idle or slow sockets, from however many addresses, never hold one.
  double head_timeout_seconds = 10;
  int max_connections_per_client = 16;
  std::string default_skill = "python";  // for file transfers without ?skill=
};

class HttpApi {
 public:
  // Throws Error::invalid for a bad listen address or a TCP address without a token.
  HttpApi(Executor& executor, HttpApiOptions options);
  ~HttpApi();
  // Binds the address; returns the TCP port (0 for a unix socket).
  int bind();
  // Serves until stop(); returns once every accepted request has been answered.
  void serve();
  // Stops accepting; safe from another thread.
  void stop();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Binds, serves and stops gracefully on SIGTERM or SIGINT (work in progress finishes).
int serve_http_until_signal(Executor& executor, const HttpApiOptions& options);

}  // namespace sandcell::agent_service
