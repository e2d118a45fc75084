// Where the model settings come from: flags, then the environment, then a JSON config file
// ({"provider": ..., "model": ..., "base_url": ..., "timeout": seconds}), then defaults.
#include <cstdlib>
#include <fstream>

#include "llm/models.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/bounded_json.hpp"

namespace sandcell::agent_service {
namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

void fill(std::string& field, const std::string& value) {
  if (field.empty()) field = value;
}

Json read_config_file(const std::string& path) {
  std::ifstream in(path);
  if (path.empty() || !in) return Json::object();
  Json config = parse_bounded_json_or_discarded(in);
  if (config.is_discarded() || !config.is_object())
    throw Error::invalid("agent config " + path + " is not a JSON object");
  return config;
}

std::string config_string(const Json& config, const char* key) {
  return config.contains(key) && config[key].is_string() ? config[key].get<std::string>() : "";
}

}  // namespace

ProviderConfig resolve_provider_config(ProviderConfig c, const std::string& config_file) {
  Json file = read_config_file(config_file);
  fill(c.provider, env("SANDCELL_PROVIDER"));
  fill(c.provider, config_string(file, "provider"));
  fill(c.provider, "openai");
  if (c.provider != "openai" && c.provider != "anthropic")
    throw Error::invalid("unknown provider '" + c.provider + "' (openai or anthropic)");
  bool openai = c.provider == "openai";
  fill(c.model, env(openai ? "OPENAI_MODEL" : "ANTHROPIC_MODEL"));
  fill(c.model, config_string(file, "model"));
  fill(c.model, openai ? "gpt-4o-mini" : "claude-sonnet-4-5");
  fill(c.base_url, env(openai ? "OPENAI_BASE_URL" : "ANTHROPIC_BASE_URL"));
  fill(c.base_url, config_string(file, "base_url"));
  fill(c.base_url, openai ? "https://api.openai.com/v1" : "https://api.anthropic.com");
  fill(c.api_key, env(openai ? "OPENAI_API_KEY" : "ANTHROPIC_API_KEY"));
  if (c.api_key.empty() && !openai)
    throw Error::invalid("ANTHROPIC_API_KEY is not set (the anthropic provider needs a key)");
  if (file.contains("timeout") && file["timeout"].is_number_integer())
    c.timeout = std::chrono::seconds(file["timeout"].get<int>());
  return c;
}

std::unique_ptr<ChatModel> make_chat_model(const ProviderConfig& config) {
  return config.provider == "anthropic" ? make_anthropic_model(config) : make_openai_model(config);
}

}  // namespace sandcell::agent_service
