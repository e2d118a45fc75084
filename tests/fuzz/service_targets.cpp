// The agent-facing servers (MCP on stdio, the HTTP API) fed bytes as a client would send them.
// Their executor starts no sandbox: it checks each request with the runner's own parser, so
// what `sandcell code --request-json` would refuse comes back as the runner's refusal, and the
// fuzzers reach from the wire format down to the code request contract.
#include <httplib.h>

#include <mutex>
#include <stdexcept>

#include "fake_executor.hpp"
#include "http/admission_gate.hpp"
#include "http/head_reader.hpp"
#include "http/routes.hpp"
#include "sandcell/agent/code_request.hpp"
#include "sandcell/agent/code_result.hpp"
#include "sandcell/agent_service/mcp_server.hpp"
#include "sandcell/base/error.hpp"
#include "targets.hpp"

namespace sandcell::fuzz {
namespace {

using agent_service::Json;

Json runner_answer(const Json& request) {
  try {
    agent::CodeRequest parsed = agent::parse_code_request(request);
    agent::check_code_text(parsed.code, 1 << 20);
    Json result = test::code_result("ok", "out\n");
    result["files"] = Json::array();
    for (const std::string& path : parsed.get)
      result["files"].push_back(
          {{"path", path}, {"size", 4}, {"base64", agent::base64_encode(path.substr(0, 4))}});
    return result;
  } catch (const Error& e) {
    return agent::error_json(e.what());
  }
}

bool is_rpc_answer(const Json& m) {
  return m.is_object() && m.value("jsonrpc", Json()) == "2.0" && m.contains("id") &&
         (m.contains("result") != m.contains("error"));
}

// One connection: httplib reads requests from `input` and writes its answers to `written`.
class StringStream final : public httplib::Stream {
 public:
  explicit StringStream(std::string_view input) : input_(input) {}
  bool is_readable() const override { return true; }
  bool is_writable() const override { return true; }
  ssize_t read(char* ptr, size_t size) override {
    if (input_.empty() && in_head) read_past_head = true;
    size_t n = std::min(size, input_.size());
    std::copy_n(input_.data(), n, ptr);
    input_.remove_prefix(n);
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    written.append(ptr, size);
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = "127.0.0.1", port = 40000;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = "127.0.0.1", port = 8080;
  }
  socket_t socket() const override { return INVALID_SOCKET; }
  bool done() const { return input_.empty(); }
  std::string written;
  bool in_head = true, read_past_head = false;

 private:
  std::string_view input_;
};

// httplib's request reader is protected: the server's own loop reaches it from a socket.
class ConnectionServer final : public httplib::Server {
 public:
  void serve(StringStream& stream) {
    bool closed = false;
    for (int i = 0; i < 4 && !closed && !stream.done(); ++i)
      process_request(stream, false, closed, [](httplib::Request&) {});
  }
  // One request from a stream that holds exactly its head.
  void read_head(StringStream& stream) {
    bool closed = false;
    process_request(stream, true, closed, [&stream](httplib::Request&) { stream.in_head = false; });
  }
};

// `serve` hands a connection to a worker once holds_whole_head() sees its head in memory
// (HeadReader), and the worker never waits for more of it: httplib must find the whole head in
// exactly those bytes. Fed the shortest prefix the reader would hand on, it must not read past it
// before the headers are done.
void check_head_framing(std::string_view input) {
  size_t request_line_end = input.find('\n');
  size_t blank_line = request_line_end == std::string_view::npos ? request_line_end : input.find("\n\r\n", request_line_end);
  if (blank_line == std::string_view::npos) return;
  const std::string_view head = input.substr(0, blank_line + 3);
  if (!agent_service::holds_whole_head(head) || agent_service::holds_whole_head(head.substr(0, head.size() - 1)))
    throw std::logic_error("holds_whole_head does not end the head at its first blank line");
  StringStream stream(head);
  ConnectionServer server;
  server.read_head(stream);
  if (stream.read_past_head) throw std::logic_error("httplib read past a head the reader saw complete");
}

}  // namespace

// Lines of `sandcell mcp`'s stdin; every answer must be a JSON-RPC response (or a batch of them)
// that serialises the way serve_mcp_stdio writes it.
void mcp_request(std::string_view input) {
  test::FakeExecutor executor;
  executor.answer = runner_answer;
  std::mutex mutex;
  std::vector<Json> sent;
  {
    agent_service::McpServer server(executor, {.max_parallel_calls = 1}, [&](const Json& message) {
      (void)message.dump(-1, ' ', false, Json::error_handler_t::replace);
      std::lock_guard lock(mutex);
      sent.push_back(message);
    });
    for (size_t start = 0; start < input.size();) {
      size_t end = std::min(input.find('\n', start), input.size());
      server.handle_line(std::string(input.substr(start, end - start)));
      start = end + 1;
    }
    server.drain();
  }
  for (const Json& answer : sent) {
    bool ok = is_rpc_answer(answer);
    if (answer.is_array()) ok = std::all_of(answer.begin(), answer.end(), is_rpc_answer);
    if (!ok)
      throw std::logic_error("not a JSON-RPC answer: " +
                             answer.dump(-1, ' ', false, Json::error_handler_t::replace));
  }
}

// The bytes of one TCP connection to `sandcell serve --token secret`. The executor never
// throws, so a 500 (the exception handler's answer) means bad input escaped as an exception.
void http_request(std::string_view input) {
  test::FakeExecutor executor;
  executor.answer = runner_answer;
  const agent_service::HttpApiOptions options{
      .token = "secret", .max_running = 1, .max_queued = 0, .max_body_bytes = 1 << 16};
  agent_service::AdmissionGate gate(options.max_running, options.max_queued);
  ConnectionServer server;
  server.set_payload_max_length(options.max_body_bytes);
  agent_service::add_request_guards(server, options, true);
  agent_service::add_routes(server, executor, gate, options);
  int failures = 0;
  server.set_logger([&failures](const httplib::Request&, const httplib::Response& res) {
    failures += res.status == 500;
  });
  check_head_framing(input);
  StringStream stream(input);
  server.serve(stream);
  if (!executor.requests.empty() && input.find("Bearer secret") == std::string_view::npos)
    throw std::logic_error("a request without the token reached the executor");
  if (failures > 0) throw std::logic_error("a request made the server fail: " + stream.written);
}

}  // namespace sandcell::fuzz
