// Anthropic Messages API: content blocks, `tool_use` from the model and `tool_result` back.
#include "llm/json_post.hpp"
#include "llm/models.hpp"
#include "sandcell/base/bounded_json.hpp"

namespace sandcell::agent_service {
namespace {

Json assistant_content(const Message& m) {
  Json blocks = Json::array();
  if (!m.text.empty()) blocks.push_back({{"type", "text"}, {"text", m.text}});
  for (const auto& call : m.tool_calls) {
    // The API wants `input` as an object; arguments that were not valid JSON are sent as {},
    // the tool_result that follows tells the model what was wrong.
    Json input = parse_bounded_json_or_discarded(call.arguments);
    if (input.is_discarded() || !input.is_object()) input = Json::object();
    blocks.push_back({{"type", "tool_use"}, {"id", call.id}, {"name", call.name}, {"input", input}});
  }
  return blocks;
}

// Anthropic needs alternating roles: consecutive tool results go into one user turn.
Json to_anthropic_messages(const std::vector<Message>& messages) {
  Json out = Json::array();
  for (const auto& m : messages) {
    if (m.role == Role::assistant) {
      out.push_back({{"role", "assistant"}, {"content", assistant_content(m)}});
      continue;
    }
    Json block = m.role == Role::tool
                     ? Json{{"type", "tool_result"}, {"tool_use_id", m.tool_call_id}, {"content", m.text}, {"is_error", m.is_error}}
                     : Json{{"type", "text"}, {"text", m.text}};
    if (!out.empty() && out.back()["role"] == "user") out.back()["content"].push_back(block);
    else out.push_back({{"role", "user"}, {"content", Json::array({block})}});
  }
  return out;
}

ChatReply from_anthropic(const Json& response, const std::string& url) {
  if (!response.contains("content") || !response["content"].is_array())
    throw ProviderError("anthropic: the answer from " + url + " has no content: " + response.dump().substr(0, 200));
  ChatReply reply;
  for (const Json& block : response["content"]) {
    std::string type = block.value("type", "");
    if (type == "text") {
      reply.text += block.value("text", "");
    } else if (type == "tool_use") {
      reply.tool_calls.push_back({block.value("id", ""), block.value("name", ""), block.value("input", Json::object()).dump()});
    }
  }
  reply.stop_reason = response.value("stop_reason", Json("")).is_string() ? response.value("stop_reason", "") : "";
  reply.usage = response.value("usage", Json::object());
  return reply;
}

class AnthropicModel final : public ChatModel {
 public:
  explicit AnthropicModel(ProviderConfig config) : config_(std::move(config)) {
    post_ = {.provider = "anthropic",
             .url = trim_slash(config_.base_url) + "/v1/messages",
             .headers = {"x-api-key: " + config_.api_key, "anthropic-version: 2023-06-01"},
             .key_variable = "ANTHROPIC_API_KEY",
             .timeout = config_.timeout,
             .retry = config_.retry};
  }

  ChatReply complete(const std::string& system, const std::vector<Message>& messages,
                     const std::vector<ToolSpec>& tools) override {
    Json body{{"model", config_.model}, {"max_tokens", config_.max_tokens}, {"messages", to_anthropic_messages(messages)}};
    if (!system.empty()) body["system"] = system;
    if (!tools.empty()) {
      body["tools"] = Json::array();
      for (const auto& t : tools)
        body["tools"].push_back({{"name", t.name}, {"description", t.description}, {"input_schema", t.input_schema}});
    }
    return from_anthropic(post_json(post_, body), post_.url);
  }

  std::string describe() const override { return "anthropic " + config_.model + " at " + config_.base_url; }

 private:
  ProviderConfig config_;
  JsonPost post_;
};

}  // namespace

std::unique_ptr<ChatModel> make_anthropic_model(const ProviderConfig& config) {
  return std::make_unique<AnthropicModel>(config);
}

}  // namespace sandcell::agent_service
