#pragma once
// A scripted model API on loopback (cpp-httplib): each POST gets the next scripted answer,
// and every request body is kept for the test to inspect. Speaks whatever the script says,
// so one class plays an OpenAI-compatible server and Anthropic's Messages API.
#include <httplib.h>

#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace sandcell::test {

struct ScriptedAnswer {
  int status = 200;
  nlohmann::json body{};  // sent as JSON unless raw_body is set
  std::string raw_body{};
  std::vector<std::pair<std::string, std::string>> headers{};
};

class FakeModelServer {
 public:
  // `path` is the POST route: "/v1/chat/completions" or "/v1/messages". `script` computes an
  // answer from the request body and the number of requests before it.
  FakeModelServer(const std::string& path, std::function<ScriptedAnswer(const nlohmann::json&, size_t)> script)
      : script_(std::move(script)) {
    server_.Post(path, [this](const httplib::Request& req, httplib::Response& res) {
      nlohmann::json body = nlohmann::json::parse(req.body, nullptr, false);
      size_t index;
      {
        std::lock_guard lock(mutex_);
        index = requests_.size();
        requests_.push_back(body);
        headers_.push_back(req.headers);
      }
      ScriptedAnswer answer = script_(body, index);
      res.status = answer.status;
      for (const auto& [k, v] : answer.headers) res.set_header(k, v);
      res.set_content(answer.raw_body.empty() ? answer.body.dump() : answer.raw_body, "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() is a no-op until the accept loop runs: wait for it, or the destructor hangs.
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeModelServer() {
    server_.stop();
    thread_.join();
  }

  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<nlohmann::json> requests() {
    std::lock_guard lock(mutex_);
    return requests_;
  }
  std::vector<httplib::Headers> headers() {
    std::lock_guard lock(mutex_);
    return headers_;
  }

 private:
  std::function<ScriptedAnswer(const nlohmann::json&, size_t)> script_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mutex_;
  std::vector<nlohmann::json> requests_;
  std::vector<httplib::Headers> headers_;
};

// Chat completion answers of an OpenAI-compatible server.
inline nlohmann::json openai_tool_call(const std::string& id, const std::string& name, const std::string& arguments) {
  return {{"id", "chatcmpl-" + id},
          {"object", "chat.completion"},
          {"choices", {{{"index", 0},
                        {"finish_reason", "tool_calls"},
                        {"message", {{"role", "assistant"}, {"content", nullptr},
                                     {"tool_calls", {{{"id", id}, {"type", "function"},
                                                      {"function", {{"name", name}, {"arguments", arguments}}}}}}}}}}},
          {"usage", {{"prompt_tokens", 10}, {"completion_tokens", 5}}}};
}
inline nlohmann::json openai_text(const std::string& text) {
  return {{"id", "chatcmpl-final"},
          {"object", "chat.completion"},
          {"choices", {{{"index", 0}, {"finish_reason", "stop"}, {"message", {{"role", "assistant"}, {"content", text}}}}}}};
}

// Messages API answers of Anthropic.
inline nlohmann::json anthropic_tool_use(const std::string& id, const std::string& name, const nlohmann::json& input) {
  return {{"id", "msg_" + id}, {"type", "message"}, {"role", "assistant"}, {"stop_reason", "tool_use"},
          {"content", {{{"type", "text"}, {"text", "Let me run that."}},
                       {{"type", "tool_use"}, {"id", id}, {"name", name}, {"input", input}}}},
          {"usage", {{"input_tokens", 10}, {"output_tokens", 5}}}};
}
inline nlohmann::json anthropic_text(const std::string& text) {
  return {{"id", "msg_final"}, {"type", "message"}, {"role", "assistant"}, {"stop_reason", "end_turn"},
          {"content", {{{"type", "text"}, {"text", text}}}}};
}

// The content of the last message of an OpenAI request (the tool result the loop fed back).
inline std::string last_message_content(const nlohmann::json& request) {
  const auto& m = request["messages"].back();
  return m["content"].is_string() ? m["content"].get<std::string>() : m["content"].dump();
}

}  // namespace sandcell::test
