// Docker's reference glob (reference_match.hpp): the pattern is read into tokens once, then
// matched by one pass over the text per token, keeping the set of text prefixes the pattern so
// far can match (a backtracking matcher is exponential in the number of `*`).
#include "sandcell/rootfs_builder/reference_match.hpp"

#include <string>
#include <vector>

#include "sandcell/base/error.hpp"

namespace sandcell::rootfs_builder {
namespace {

struct Token {
  enum Kind { Literal, AnyOne, Star, Class } kind = Literal;
  char literal = 0;
  bool negated = false;
  std::vector<std::pair<unsigned char, unsigned char>> ranges;  // Class: lo..hi inclusive

  bool matches(unsigned char c) const {
    switch (kind) {
      case Literal: return c == static_cast<unsigned char>(literal);
      case AnyOne: return c != '/';
      case Class: {
        bool in = false;
        for (const auto& [lo, hi] : ranges) in = in || (lo <= c && c <= hi);
        return in != negated;
      }
      case Star: break;
    }
    return false;
  }
};

[[noreturn]] void bad_pattern(std::string_view pattern, const char* why) {
  throw Error::invalid("bad reference pattern '" + std::string(pattern.substr(0, 256)) +
                       (pattern.size() > 256 ? "..." : "") + "': " + why);
}

// One character of a class (path.Match's getEsc): not '-' or ']' unescaped, and something must
// follow it (the class's end at least).
unsigned char class_char(std::string_view pattern, size_t& i) {
  if (i >= pattern.size() || pattern[i] == '-' || pattern[i] == ']') bad_pattern(pattern, "bad character class");
  if (pattern[i] == '\\' && ++i >= pattern.size()) bad_pattern(pattern, "trailing \\");
  unsigned char c = static_cast<unsigned char>(pattern[i++]);
  if (i >= pattern.size()) bad_pattern(pattern, "unclosed character class");
  return c;
}

std::vector<Token> tokens_of(std::string_view pattern) {
  std::vector<Token> out;
  for (size_t i = 0; i < pattern.size();) {
    Token t;
    char c = pattern[i++];
    if (c == '*') {
      t.kind = Token::Star;
      if (!out.empty() && out.back().kind == Token::Star) continue;  // ** is *
    } else if (c == '?') {
      t.kind = Token::AnyOne;
    } else if (c == '\\') {
      if (i >= pattern.size()) bad_pattern(pattern, "trailing \\");
      t.literal = pattern[i++];
    } else if (c == '[') {
      t.kind = Token::Class;
      if (i < pattern.size() && pattern[i] == '^') t.negated = true, ++i;
      while (true) {
        if (i < pattern.size() && pattern[i] == ']' && !t.ranges.empty()) {
          ++i;
          break;
        }
        unsigned char lo = class_char(pattern, i), hi = lo;
        if (pattern[i] == '-') {
          ++i;
          hi = class_char(pattern, i);
        }
        t.ranges.emplace_back(lo, hi);
      }
    } else {
      t.literal = c;
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

bool glob_match(std::string_view pattern, std::string_view text) {
  const std::vector<Token> tokens = tokens_of(pattern);
  // reach[j]: the tokens so far match text[0, j).
  std::vector<char> reach(text.size() + 1, 0), next(text.size() + 1, 0);
  reach[0] = 1;
  for (const Token& t : tokens) {
    if (t.kind == Token::Star) {
      next[0] = reach[0];
      for (size_t j = 1; j <= text.size(); ++j) next[j] = reach[j] || (next[j - 1] && text[j - 1] != '/');
    } else {
      next[0] = 0;
      for (size_t j = 1; j <= text.size(); ++j)
        next[j] = reach[j - 1] && t.matches(static_cast<unsigned char>(text[j - 1]));
    }
    reach.swap(next);
  }
  return reach[text.size()] != 0;
}

bool reference_matches(std::string_view pattern, std::string_view familiar) {
  if (glob_match(pattern, familiar)) return true;
  // Without the tag: the colon after the last '/' (a registry's port comes before one).
  size_t slash = familiar.rfind('/');
  size_t colon = familiar.rfind(':');
  if (colon == std::string_view::npos || (slash != std::string_view::npos && colon < slash)) return false;
  return glob_match(pattern, familiar.substr(0, colon));
}

}  // namespace sandcell::rootfs_builder
