// OpenAI-compatible chat completions (OpenAI, vLLM, llama.cpp server, Ollama's /v1) with
// `tools` and `tool_calls`.
#include "llm/json_post.hpp"
#include "llm/models.hpp"

namespace sandcell::agent_service {
namespace {

Json to_openai(const Message& m) {
  switch (m.role) {
    case Role::user:
      return {{"role", "user"}, {"content", m.text}};
    case Role::tool:
      return {{"role", "tool"}, {"tool_call_id", m.tool_call_id}, {"content", m.text}};
    case Role::assistant:
      break;
  }
  Json out{{"role", "assistant"}, {"content", m.text.empty() ? Json() : Json(m.text)}};
  if (!m.tool_calls.empty()) {
    out["tool_calls"] = Json::array();
    for (const auto& call : m.tool_calls)
      out["tool_calls"].push_back(
          {{"id", call.id}, {"type", "function"}, {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
  }
  return out;
}

ChatReply from_openai(const Json& response, const std::string& url) {
  if (!response.contains("choices") || !response["choices"].is_array() || response["choices"].empty())
    throw ProviderError("openai: the answer from " + url + " has no choices: " + response.dump().substr(0, 200));
  const Json& choice = response["choices"][0];
  const Json message = choice.value("message", Json::object());
  ChatReply reply;
  if (message.contains("content") && message["content"].is_string()) reply.text = message["content"];
  reply.stop_reason = choice.value("finish_reason", Json("")).is_string() ? choice.value("finish_reason", "") : "";
  if (message.contains("tool_calls") && message["tool_calls"].is_array()) {
    int n = 0;
    for (const Json& call : message["tool_calls"]) {
      const Json function = call.value("function", Json::object());
      ToolCall tc;
      tc.id = call.value("id", "call_" + std::to_string(n++));
      tc.name = function.value("name", "");
      // Some servers send arguments as an object instead of a JSON string.
      const Json& args = function.contains("arguments") ? function["arguments"] : Json();
      tc.arguments = args.is_string() ? args.get<std::string>() : args.is_null() ? "{}" : args.dump();
      reply.tool_calls.push_back(std::move(tc));
    }
  }
  reply.usage = response.value("usage", Json::object());
  return reply;
}

class OpenAiModel final : public ChatModel {
 public:
  explicit OpenAiModel(ProviderConfig config) : config_(std::move(config)) {
    post_ = {.provider = "openai",
             .url = trim_slash(config_.base_url) + "/chat/completions",
             .headers = {},
             .key_variable = "OPENAI_API_KEY",
             .timeout = config_.timeout,
             .retry = config_.retry};
    // Local servers (llama.cpp, Ollama) need no key; sending none is what they expect.
    if (!config_.api_key.empty()) post_.headers.push_back("Authorization: Bearer " + config_.api_key);
  }

  ChatReply complete(const std::string& system, const std::vector<Message>& messages,
                     const std::vector<ToolSpec>& tools) override {
    Json body{{"model", config_.model}, {"messages", Json::array()}, {"max_tokens", config_.max_tokens}};
    if (!system.empty()) body["messages"].push_back({{"role", "system"}, {"content", system}});
    for (const auto& m : messages) body["messages"].push_back(to_openai(m));
    if (!tools.empty()) {
      body["tools"] = Json::array();
      for (const auto& t : tools)
        body["tools"].push_back({{"type", "function"},
                                 {"function", {{"name", t.name}, {"description", t.description}, {"parameters", t.input_schema}}}});
    }
    return from_openai(post_json(post_, body), post_.url);
  }

  std::string describe() const override { return "openai " + config_.model + " at " + config_.base_url; }

 private:
  ProviderConfig config_;
  JsonPost post_;
};

}  // namespace

std::unique_ptr<ChatModel> make_openai_model(const ProviderConfig& config) {
  return std::make_unique<OpenAiModel>(config);
}

std::string trim_slash(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

}  // namespace sandcell::agent_service
