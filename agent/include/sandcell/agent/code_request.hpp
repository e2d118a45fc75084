#pragma once
// One request to run code: what `sandcell code` flags say, or the JSON an agent sends
// (`sandcell code --request-json FILE|-`, the contract documented in agent/README.md).
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sandcell/agent/limit_args.hpp"

namespace sandcell::agent {

struct InputFile {
  std::string path{};     // under /workspace
  std::string content{};  // bytes
};

struct CodeRequest {
  std::string skill{};  // name or language alias
  std::string code{};
  std::optional<std::string> session{};
  LimitArgs limits{};
  std::vector<std::string> packages{};
  std::optional<std::string> net{};  // none | allow:HOSTS | full; unset: the skill's default
  std::vector<std::string> env{};  // "K=V", over the image's
  std::optional<std::string> stdin_data{};
  std::vector<InputFile> files{};    // written into /workspace before the run
  std::vector<std::string> get{};    // workspace paths returned in the result's "files"
};

// Reads the JSON request; throws Error::invalid naming the field that is wrong. Unknown fields
// are refused (a misspelt "timout" must not silently run with the default).
CodeRequest parse_code_request(const nlohmann::json& request);

// Code must be text: not empty, no NUL bytes, valid UTF-8, at most max_bytes. Throws
// Error::invalid saying which.
void check_code_text(const std::string& code, size_t max_bytes);

}  // namespace sandcell::agent
