// .dockerignore and COPY source patterns, compiled to regular expressions the way
// moby/patternmatcher does it, so the same pattern selects the same files as in Docker.
#include "sandcell/rootfs_builder/dockerignore.hpp"

#include <algorithm>
#include <regex>
#include <set>

#include "sandcell/base/error.hpp"

namespace sandcell::rootfs_builder {

struct DockerIgnore::Rule {
  bool exclusion = false;  // a `!` line: re-includes
  std::regex regex;
};

namespace {

std::string_view trim_pattern(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// `[...]` copied into the expression; `\x` inside stays an escape. Returns the index after `]`.
size_t append_class(std::string_view p, size_t i, std::string& re) {
  size_t j = i + 1;
  re += '[';
  if (j < p.size() && p[j] == '^') re += p[j++];
  for (; j < p.size() && p[j] != ']'; ++j) {
    if (p[j] == '\\' && j + 1 < p.size()) {
      re += '\\';
      re += p[++j];
    } else {
      re += p[j];
    }
  }
  if (j >= p.size())
    throw Error::invalid("syntax error in pattern: unclosed [ in \"" + std::string(p) + "\"");
  re += ']';
  return j + 1;
}

// `**` is any number of directories (zero included), `*` and `?` never cross '/'.
std::string to_regex(std::string_view p) {
  std::string re = "^";
  for (size_t i = 0; i < p.size();) {
    char c = p[i];
    if (c == '*' && i + 1 < p.size() && p[i + 1] == '*') {
      i += 2;
      if (i < p.size() && p[i] == '/') ++i;
      re += i == p.size() ? ".*" : "(.*/)?";
    } else if (c == '*') {
      re += "[^/]*", ++i;
    } else if (c == '?') {
      re += "[^/]", ++i;
    } else if (c == '[') {
      i = append_class(p, i, re);
    } else if (c == '\\' && i + 1 < p.size()) {
      re += '\\', re += p[i + 1], i += 2;
    } else {
      if (std::string_view(".+()|{}$^]\\").find(c) != std::string_view::npos) re += '\\';
      re += c, ++i;
    }
  }
  return re + "$";
}

// std::regex matches by recursion, a frame or more per character of pattern and path: a
// ~30k-character pattern or path overflows the stack (SIGSEGV). Patterns are bounded here,
// paths by the context walk (list_tree_at), both to PATH_MAX.
constexpr size_t kMaxPatternBytes = 4096;

std::regex compile(const std::string& pattern) {
  if (pattern.size() > kMaxPatternBytes)
    throw Error::invalid("pattern longer than " + std::to_string(kMaxPatternBytes) + " characters: \"" +
                         pattern.substr(0, 64) + "...\"");
  try {
    return std::regex(to_regex(pattern), std::regex::ECMAScript | std::regex::optimize);
  } catch (const std::regex_error&) {
    throw Error::invalid("syntax error in pattern: \"" + pattern + "\"");
  }
}

// The path's ancestors, nearest the root first: "a/b/c" -> "a", "a/b".
std::vector<std::string> parents(const std::string& path) {
  std::vector<std::string> out;
  for (size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1))
    out.push_back(path.substr(0, slash));
  return out;
}

bool matches_or_parent_matches(const std::regex& re, const std::string& path) {
  if (std::regex_match(path, re)) return true;
  for (const auto& parent : parents(path))
    if (std::regex_match(parent, re)) return true;
  return false;
}

}  // namespace

std::string clean_context_path(std::string_view path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = std::min(path.find('/', start), path.size());
    std::string_view part = path.substr(start, end - start);
    start = end + 1;
    if (part.empty() || part == ".") continue;
    // Context paths are inside the context: ".." stops at its root, as at "/" (a leading ".."
    // never survives to be joined to the context directory).
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else {
      parts.emplace_back(part);
    }
  }
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "/") + p;
  return out.empty() ? "." : out;
}

DockerIgnore DockerIgnore::parse(std::string_view file_text) {
  if (file_text.starts_with("\xEF\xBB\xBF")) file_text.remove_prefix(3);
  std::vector<std::string> patterns;
  while (!file_text.empty()) {
    auto nl = file_text.find('\n');
    std::string_view line = file_text.substr(0, nl);
    file_text.remove_prefix(nl == std::string_view::npos ? file_text.size() : nl + 1);
    if (line.starts_with('#')) continue;
    line = trim_pattern(line);
    if (!line.empty()) patterns.emplace_back(line);
  }
  return DockerIgnore(patterns);
}

DockerIgnore::DockerIgnore(const std::vector<std::string>& patterns) {
  for (const auto& raw : patterns) {
    std::string_view p = trim_pattern(raw);
    auto rule = std::make_shared<Rule>();
    if (p.starts_with('!')) {
      rule->exclusion = true;
      p = trim_pattern(p.substr(1));
      if (p.empty()) throw Error::invalid("illegal exclusion pattern: \"!\" in .dockerignore");
    }
    if (p.empty()) continue;
    std::string cleaned = clean_context_path(p);
    rule->regex = compile(cleaned);
    patterns_.push_back((rule->exclusion ? "!" : "") + cleaned);
    rules_.push_back(std::move(rule));
  }
}

bool DockerIgnore::excluded(std::string_view path) const {
  const std::string p = clean_context_path(path);
  if (p.size() > kMaxPatternBytes) throw Error::invalid("context path longer than 4096 characters");
  bool matched = false;
  for (const auto& rule : rules_) {
    // An inclusion cannot change an already excluded path, nor an exclusion an included one.
    if (rule->exclusion != matched) continue;
    if (matches_or_parent_matches(rule->regex, p)) matched = !rule->exclusion;
  }
  return matched;
}

std::vector<std::string> match_sources(std::string_view pattern,
                                       const std::vector<std::string>& context_paths) {
  const std::string cleaned = clean_context_path(pattern);
  if (cleaned == ".") return {"."};
  const std::regex re = compile(cleaned);
  std::set<std::string> candidates;
  for (const auto& path : context_paths) {
    std::string p = clean_context_path(path);
    if (p.size() > kMaxPatternBytes) throw Error::invalid("path longer than 4096 characters in the build's sources");
    for (auto& parent : parents(p)) candidates.insert(std::move(parent));
    candidates.insert(std::move(p));
  }
  std::set<std::string> found;
  for (const auto& c : candidates) {
    if (!std::regex_match(c, re)) continue;
    auto ps = parents(c);
    if (std::none_of(ps.begin(), ps.end(), [&](const auto& a) { return found.count(a) > 0; }))
      found.insert(c);
  }
  return {found.begin(), found.end()};
}

}  // namespace sandcell::rootfs_builder
