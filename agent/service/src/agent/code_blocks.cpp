#include "agent/code_blocks.hpp"

#include <algorithm>
#include <map>
#include <optional>

namespace sandcell::agent_service {
namespace {

std::optional<std::string> language_of(std::string info, const std::string& default_language) {
  std::transform(info.begin(), info.end(), info.begin(), [](unsigned char c) { return std::tolower(c); });
  info = info.substr(0, info.find_first_of(" \t{"));
  if (info.empty()) return default_language;
  static const std::map<std::string, std::string> aliases = {
      {"python", "python"}, {"python3", "python"}, {"py", "python"},   {"bash", "bash"},
      {"sh", "bash"},       {"shell", "bash"},     {"js", "node"},     {"javascript", "node"},
      {"node", "node"},     {"c", "c"},            {"cpp", "cpp"},     {"c++", "cpp"},
      {"cxx", "cpp"}};
  auto it = aliases.find(info);
  if (it == aliases.end()) return std::nullopt;
  return it->second;
}

}  // namespace

std::vector<CodeBlock> extract_code_blocks(std::string_view text, const std::string& default_language) {
  std::vector<CodeBlock> blocks;
  size_t pos = 0;
  while ((pos = text.find("```", pos)) != std::string_view::npos) {
    size_t info_end = text.find('\n', pos);
    if (info_end == std::string_view::npos) break;
    std::string info(text.substr(pos + 3, info_end - pos - 3));
    size_t close = text.find("\n```", info_end);
    if (close == std::string_view::npos) break;
    std::string code(text.substr(info_end + 1, close + 1 - (info_end + 1)));
    if (auto language = language_of(info, default_language); language && !code.empty())
      blocks.push_back({*language, code});
    pos = close + 4;
  }
  return blocks;
}

}  // namespace sandcell::agent_service
