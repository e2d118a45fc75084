#pragma once
// Fenced code blocks in a model's text, for models without tool calling.
#include <string>
#include <string_view>
#include <vector>

namespace sandcell::agent_service {

struct CodeBlock {
  std::string language{};  // a skill name: python, node, bash, c, cpp
  std::string code{};
};

// Blocks fenced with ``` whose info string names a language we run (or is empty: then
// `default_language`). Blocks marked as output, text, json and the like are not code.
std::vector<CodeBlock> extract_code_blocks(std::string_view text, const std::string& default_language);

}  // namespace sandcell::agent_service
