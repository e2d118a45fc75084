#pragma once
// sandcell as an MCP server: JSON-RPC 2.0, one message per line. Speaks the initialize
// handshake of protocol versions 2024-11-05 to 2025-11-25 and the stateless 2026-07-28 form
// (server/discover, protocol version and client capabilities in every request's _meta).
#include <atomic>
#include <condition_variable>
#include <deque>
#include <optional>
#include <thread>
#include <vector>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <stop_token>
#include <string>

#include "sandcell/agent_service/executor.hpp"

namespace sandcell::agent_service {

struct McpServerOptions {
  std::string default_skill = "python";
  int max_parallel_calls = 4;  // tools/call running at once; more wait in a queue
  std::string version{};         // serverInfo.version
  // The operator's --allowed-net, offered in run_code's schema; `sandcell code` enforces it (a
  // wider `net` is refused with a message naming the limit).
  std::string allowed_net = "none";
};

class McpServer {
 public:
  using Send = std::function<void(const Json& message)>;
  McpServer(Executor& executor, McpServerOptions options, Send send);
  ~McpServer();
  // One line from the client. Answers go to `send`; a tools/call is answered from a worker
  // thread, so a long run does not block pings or other calls.
  void handle_line(const std::string& line);
  // Waits until every tools/call has been answered. The destructor also finishes them.
  void drain();

 private:
  std::optional<Json> dispatch(const Json& message, bool allow_async);
  Json handle_request(const std::string& method, const Json& params, bool modern, std::stop_token stop = {});
  void start_call(const Json& id, Json params, bool modern);
  void send_response(const Json& id, const Json& result_or_error, bool is_error);
  void work();

  Executor& executor_;
  McpServerOptions options_;
  Send send_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int pending_ = 0;  // tools/call queued or running
  bool stopping_ = false;
  std::deque<std::function<void()>> jobs_;
  std::set<std::string> cancelled_;  // ids (dumped) of calls whose answer must not be sent
  std::map<std::string, std::stop_source> running_;  // ids (dumped) of calls queued or running
  std::vector<std::thread> workers_;
};

// Serves the client on stdin/stdout until stdin closes; logs go to stderr. Returns 0.
int serve_mcp_stdio(Executor& executor, const McpServerOptions& options);

}  // namespace sandcell::agent_service
