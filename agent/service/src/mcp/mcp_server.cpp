#include "sandcell/agent_service/mcp_server.hpp"

#include <algorithm>
#include <iostream>

#include "mcp/mcp_protocol.hpp"
#include "mcp/mcp_tools.hpp"
#include "sandcell/base/bounded_json.hpp"

namespace sandcell::agent_service {
namespace {

using mcp::RpcError;

Json server_info(const McpServerOptions& options) {
  return {{"name", "sandcell"}, {"version", options.version.empty() ? "0" : options.version}};
}

const char* kInstructions =
    "sandcell runs code in isolated Linux sandboxes. Call run_code with a language and a program; "
    "reuse a session id to keep files in /workspace between calls. Figures saved as PNG under "
    "/workspace/out come back as images.";

Json capabilities() { return {{"tools", {{"listChanged", false}}}}; }

// Results of the stateless era say what they are and who answered; list results say how long
// they may be cached (the tool list never changes while the server runs).
Json stateless_result(Json result, const std::string& method, const McpServerOptions& options) {
  result["resultType"] = "complete";
  result["_meta"][mcp::kMetaServerInfo] = server_info(options);
  if (method == "server/discover" || method == "tools/list") {
    result["ttlMs"] = 3600000;
    result["cacheScope"] = "public";
  }
  return result;
}

Json discover_result(const McpServerOptions& options) {
  return {{"supportedVersions", mcp::supported_versions()},
          {"capabilities", capabilities()},
          {"serverInfo", server_info(options)},
          {"instructions", kInstructions}};
}

std::string id_key(const Json& id) { return id.dump(); }

}  // namespace

McpServer::McpServer(Executor& executor, McpServerOptions options, Send send)
    : executor_(executor), options_(std::move(options)), send_(std::move(send)) {
  for (int i = 0; i < std::max(1, options_.max_parallel_calls); ++i) workers_.emplace_back([this] { work(); });
}

McpServer::~McpServer() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  for (auto& worker : workers_) worker.join();  // workers finish the queued calls first
}

void McpServer::drain() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return pending_ == 0; });
}

void McpServer::send_response(const Json& id, const Json& body, bool is_error) {
  {
    std::lock_guard lock(mutex_);
    // A cancelled request gets no answer at all (notifications/cancelled).
    if (cancelled_.erase(id_key(id))) return;
  }
  send_(Json{{"jsonrpc", "2.0"}, {"id", id}, {is_error ? "error" : "result", body}});
}

void McpServer::handle_line(const std::string& line) {
  if (line.find_first_not_of(" \t\r") == std::string::npos) return;
  Json message = parse_bounded_json_or_discarded(line);
  if (message.is_discarded()) {
    send_(Json{{"jsonrpc", "2.0"}, {"id", nullptr}, {"error", RpcError{mcp::kParseError, "Parse error", nullptr}.to_json()}});
    return;
  }
  if (message.is_array() && message.empty()) {
    // JSON-RPC 2.0, "Batch": an empty array is an Invalid Request, answered with one error.
    send_(Json{{"jsonrpc", "2.0"}, {"id", nullptr}, {"error", RpcError{mcp::kInvalidRequest, "Invalid Request", nullptr}.to_json()}});
    return;
  }
  if (message.is_array()) {
    // JSON-RPC batches (2025-03-26): answered together, calls run in order.
    Json answers = Json::array();
    for (const Json& m : message)
      if (auto answer = dispatch(m, false)) answers.push_back(*answer);
    if (!answers.empty()) send_(answers);
    return;
  }
  if (auto answer = dispatch(message, true)) send_(*answer);
}

std::optional<Json> McpServer::dispatch(const Json& message, bool allow_async) {
  auto error = [](const Json& id, const RpcError& e) { return Json{{"jsonrpc", "2.0"}, {"id", id}, {"error", e.to_json()}}; };
  // value() with a Json default: a "jsonrpc" of another type must not throw (type_error).
  if (!message.is_object() || message.value("jsonrpc", Json()) != "2.0" || !message.contains("method") ||
      !message["method"].is_string())
    return error(message.is_object() && message.contains("id") ? message["id"] : Json(), {mcp::kInvalidRequest, "Invalid Request", nullptr});
  const std::string method = message["method"];
  const Json params = message.contains("params") && message["params"].is_object() ? message["params"] : Json::object();
  if (!message.contains("id")) {
    if (method == "notifications/cancelled" && params.contains("requestId")) {
      // The call's answer is dropped and its run stopped: the sandbox and everything in it is
      // killed rather than left to run to its timeout for nobody.
      std::lock_guard lock(mutex_);
      auto running = running_.find(id_key(params["requestId"]));
      if (running != running_.end()) {
        cancelled_.insert(running->first);
        running->second.request_stop();
      }
    }
    return std::nullopt;  // notifications are never answered
  }
  const Json id = message["id"];
  const Json meta = params.contains("_meta") && params["_meta"].is_object() ? params["_meta"] : Json::object();
  bool stateless = meta.contains(mcp::kMetaProtocolVersion);
  if (stateless)
    if (auto problem = mcp::check_stateless_meta(meta)) return error(id, *problem);
  if (method == "tools/call" && allow_async) {
    start_call(id, params, stateless);
    return std::nullopt;
  }
  try {
    Json result = handle_request(method, params, stateless);
    // server/discover belongs to the stateless era even when a client sends it bare.
    bool stateless_shape = stateless || method == "server/discover";
    return Json{{"jsonrpc", "2.0"}, {"id", id}, {"result", stateless_shape ? stateless_result(result, method, options_) : result}};
  } catch (const RpcError& e) {
    return error(id, e);
  }
}

Json McpServer::handle_request(const std::string& method, const Json& params, bool stateless, std::stop_token stop) {
  if (method == "server/discover") return discover_result(options_);
  if (method == "initialize" && !stateless) {
    std::string requested = params.value("protocolVersion", Json("")).is_string() ? params.value("protocolVersion", "") : "";
    return {{"protocolVersion", mcp::negotiate(requested)},
            {"capabilities", capabilities()},
            {"serverInfo", server_info(options_)},
            {"instructions", kInstructions}};
  }
  if (method == "ping" && !stateless) return Json::object();  // removed in 2026-07-28
  if (method == "tools/list") return {{"tools", mcp::tool_list(options_.allowed_net)}};
  if (method == "tools/call") {
    if (!params.contains("name") || !params["name"].is_string())
      throw RpcError{mcp::kInvalidParams, "tools/call needs params.name", nullptr};
    const std::string name = params["name"];
    std::optional<Json> result = mcp::call_tool(executor_, options_.default_skill, name,
                                                params.value("arguments", Json::object()), stop);
    if (!result) throw RpcError{mcp::kInvalidParams, "unknown tool: " + name, nullptr};
    return std::move(*result);
  }
  throw RpcError{mcp::kMethodNotFound, "Method not found: " + method, nullptr};
}

void McpServer::start_call(const Json& id, Json params, bool stateless) {
  std::lock_guard lock(mutex_);
  ++pending_;
  std::stop_token stop = running_[id_key(id)].get_token();
  jobs_.push_back([this, id, params = std::move(params), stateless, stop] {
    try {
      if (stop.stop_requested()) throw RpcError{mcp::kInternalError, "cancelled before it started", nullptr};
      Json result = handle_request("tools/call", params, stateless, stop);
      send_response(id, stateless ? stateless_result(result, "tools/call", options_) : result, false);
    } catch (const RpcError& e) {
      send_response(id, e.to_json(), true);
    } catch (const std::exception& e) {
      send_response(id, RpcError{mcp::kInternalError, e.what(), nullptr}.to_json(), true);
    }
    std::lock_guard lock(mutex_);
    cancelled_.erase(id_key(id));
    running_.erase(id_key(id));
  });
  changed_.notify_all();
}

void McpServer::work() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stopping, and nothing left to do
    auto job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    job();
    lock.lock();
    --pending_;
    changed_.notify_all();
  }
}

int serve_mcp_stdio(Executor& executor, const McpServerOptions& options) {
  std::mutex out_mutex;
  McpServer server(executor, options, [&](const Json& message) {
    std::lock_guard lock(out_mutex);
    // Program output may hold invalid UTF-8: replaced, never a reason to drop the answer.
    std::cout << message.dump(-1, ' ', false, Json::error_handler_t::replace) << "\n" << std::flush;
  });
  std::cerr << "sandcell mcp: serving on stdio\n";
  for (std::string line; std::getline(std::cin, line);) server.handle_line(line);
  server.drain();
  return 0;
}

}  // namespace sandcell::agent_service
