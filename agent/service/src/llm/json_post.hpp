#pragma once
// POST a JSON body to a model API with libcurl: timeouts, retries with backoff on 429, 5xx and
// transport errors (a server's Retry-After is honoured, capped), and errors that say what to fix.
#include <string>
#include <vector>

#include "sandcell/agent_service/chat_model.hpp"

namespace sandcell::agent_service {

struct JsonPost {
  std::string provider{};              // names the provider in errors: "openai: ..."
  std::string url{};
  std::vector<std::string> headers{};  // "Name: value"
  std::string key_variable{};          // the environment variable to blame on 401/403
  std::chrono::seconds timeout{120};
  RetryPolicy retry{};
};

// Returns the parsed response of a 2xx answer; throws ProviderError otherwise.
Json post_json(const JsonPost& post, const Json& body);

}  // namespace sandcell::agent_service
