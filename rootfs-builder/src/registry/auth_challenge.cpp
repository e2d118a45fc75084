// The auth-param grammar: token "=" ( token / quoted-string ), comma separated, where a
// quoted-string may hold backslash escapes. libcurl parses challenges only for the schemes it
// answers itself, and registries' Bearer flow is not one of them.
#include "auth_challenge.hpp"

#include <algorithm>
#include <cctype>

namespace sandcell::rootfs_builder {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

void skip_separators(std::string_view text, std::size_t& pos) {
  while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' || text[pos] == ',')) ++pos;
}

std::string read_token(std::string_view text, std::size_t& pos) {
  std::size_t start = pos;
  while (pos < text.size() && text[pos] != '=' && text[pos] != ',' && text[pos] != ' ' && text[pos] != '\t') ++pos;
  return std::string(text.substr(start, pos - start));
}

std::string read_value(std::string_view text, std::size_t& pos) {
  if (pos >= text.size() || text[pos] != '"') return read_token(text, pos);
  std::string value;
  for (++pos; pos < text.size() && text[pos] != '"'; ++pos) {
    if (text[pos] == '\\' && pos + 1 < text.size()) ++pos;
    value += text[pos];
  }
  ++pos;  // the closing quote
  return value;
}

}  // namespace

std::string AuthChallenge::param(const std::string& name) const {
  auto it = params.find(name);
  return it == params.end() ? "" : it->second;
}

std::optional<AuthChallenge> parse_auth_challenge(std::string_view header) {
  std::size_t pos = 0;
  skip_separators(header, pos);
  AuthChallenge challenge{.scheme = lower(read_token(header, pos)), .params = {}};
  if (challenge.scheme.empty()) return std::nullopt;
  for (skip_separators(header, pos); pos < header.size(); skip_separators(header, pos)) {
    std::string name = lower(read_token(header, pos));
    if (pos >= header.size() || header[pos] != '=') break;  // a second challenge: we use the first
    ++pos;
    challenge.params[name] = read_value(header, pos);
  }
  return challenge;
}

}  // namespace sandcell::rootfs_builder
