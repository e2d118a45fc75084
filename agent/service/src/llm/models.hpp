#pragma once
// The provider implementations behind make_chat_model.
#include <memory>
#include <string>

#include "sandcell/agent_service/chat_model.hpp"

namespace sandcell::agent_service {

std::unique_ptr<ChatModel> make_openai_model(const ProviderConfig& config);
std::unique_ptr<ChatModel> make_anthropic_model(const ProviderConfig& config);
std::string trim_slash(std::string url);

}  // namespace sandcell::agent_service
