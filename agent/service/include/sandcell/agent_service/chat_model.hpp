#pragma once
// A chat model that can call tools, behind one interface for OpenAI-compatible servers (OpenAI,
// vLLM, llama.cpp, Ollama) and Anthropic's Messages API.
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace sandcell::agent_service {

using Json = nlohmann::json;

struct ToolCall {
  std::string id{};
  std::string name{};
  std::string arguments{};  // JSON text as the model wrote it; may be invalid
};

enum class Role { user, assistant, tool };

struct Message {
  Role role = Role::user;
  std::string text{};
  std::vector<ToolCall> tool_calls{};  // assistant turns
  std::string tool_call_id{};          // tool turns: which call this answers
  bool is_error = false;             // tool turns
};

struct ToolSpec {
  std::string name{};
  std::string description{};
  Json input_schema{};  // JSON Schema of the arguments object
};

struct ChatReply {
  std::string text{};
  std::vector<ToolCall> tool_calls{};
  std::string stop_reason{};
  Json usage{};
};

class ChatModel {
 public:
  virtual ~ChatModel() = default;
  // One completion of the conversation; throws ProviderError on failure.
  virtual ChatReply complete(const std::string& system, const std::vector<Message>& messages,
                             const std::vector<ToolSpec>& tools) = 0;
  virtual std::string describe() const = 0;  // "openai gpt-4o-mini at https://..."
};

// A provider failure; `tools_unsupported` marks a server that rejected the tools parameter, so
// the loop can fall back to fenced code blocks.
class ProviderError : public std::runtime_error {
 public:
  ProviderError(const std::string& message, int http_status = 0, bool tools_unsupported = false)
      : std::runtime_error(message), http_status(http_status), tools_unsupported(tools_unsupported) {}
  int http_status;
  bool tools_unsupported;
};

struct RetryPolicy {
  int max_attempts = 4;
  std::chrono::milliseconds first_backoff{500};
  std::chrono::milliseconds max_backoff{20000};  // also caps a server's Retry-After
};

struct ProviderConfig {
  std::string provider{};  // "openai" or "anthropic"
  std::string model{};
  std::string base_url{};
  std::string api_key{};
  std::chrono::seconds timeout{120};
  int max_tokens = 4096;
  RetryPolicy retry{};
};

// Fills what `flags` left empty from the environment (OPENAI_API_KEY, OPENAI_BASE_URL,
// OPENAI_MODEL, ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, ANTHROPIC_MODEL, SANDCELL_PROVIDER),
// then from the JSON config file (if it exists), then from the defaults. Throws on a bad file.
ProviderConfig resolve_provider_config(ProviderConfig flags, const std::string& config_file);

std::unique_ptr<ChatModel> make_chat_model(const ProviderConfig& config);

}  // namespace sandcell::agent_service
