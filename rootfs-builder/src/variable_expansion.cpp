// Variable expansion as BuildKit's shell lexer does it for Dockerfile words, plus the ARG scoping
// rules (predefined, global and stage ARGs).
#include <array>
#include <cctype>

#include "sandcell/rootfs_builder/dockerfile.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::rootfs_builder {
namespace {

enum class QuoteRules {
  kWord,     // a Dockerfile word: '...' and "..." are quotes, the escape escapes anything
  kHeredoc,  // a here-document body: quotes are text, the escape only escapes $ and itself
};

class WordExpander {
 public:
  WordExpander(std::string_view text, const VariableLookup& lookup, char escape,
               const std::string& where, QuoteRules rules)
      : s_(text), lookup_(lookup), escape_(escape), where_(where), rules_(rules) {}

  std::string run() { return until(std::nullopt); }

 private:
  bool at_end() const { return pos_ >= s_.size(); }
  char peek() const { return s_[pos_]; }
  [[noreturn]] void fail(const std::string& message) const {
    throw Error::invalid(where_ + ": " + message);
  }

  // Reads up to `stop` (consumed; stopped_ tells whether it was found) or the end.
  std::string until(std::optional<char> stop) {
    std::string out;
    while (!at_end()) {
      char c = peek();
      if (stop && c == *stop) {
        ++pos_;
        stopped_ = true;
        return out;
      }
      if (c == '$') {
        out += dollar();
      } else if (rules_ == QuoteRules::kWord && c == '\'') {
        out += single_quoted();
      } else if (rules_ == QuoteRules::kWord && c == '"') {
        out += double_quoted();
      } else {
        out += plain_char();
      }
    }
    stopped_ = false;
    return out;
  }

  std::string plain_char() {
    char c = s_[pos_++];
    if (c != escape_) return std::string(1, c);
    if (at_end()) return "";  // a trailing escape is dropped
    if (rules_ == QuoteRules::kHeredoc && peek() != '$' && peek() != escape_)
      return std::string(1, c);
    return std::string(1, s_[pos_++]);
  }

  std::string single_quoted() {
    auto end = s_.find('\'', pos_ + 1);
    if (end == std::string_view::npos)
      fail("unexpected end of statement while looking for matching single-quote");
    std::string out(s_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return out;
  }

  std::string double_quoted() {
    ++pos_;
    std::string out;
    for (;;) {
      if (at_end()) fail("unexpected end of statement while looking for matching double-quote");
      char c = peek();
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c == '$') {
        out += dollar();
        continue;
      }
      ++pos_;
      // Inside double quotes only ", $ and the escape itself can be escaped.
      if (c == escape_ && !at_end() && (peek() == '"' || peek() == '$' || peek() == escape_))
        c = s_[pos_++];
      out += c;
    }
  }

  // A name: letters, digits, _; or a run of digits; or one special parameter.
  std::string name() {
    std::string n;
    if (at_end()) return n;
    if (std::isdigit(static_cast<unsigned char>(peek()))) {
      while (!at_end() && std::isdigit(static_cast<unsigned char>(peek()))) n += s_[pos_++];
      return n;
    }
    if (std::string_view("@*#?-$!0").find(peek()) != std::string_view::npos) return {s_[pos_++]};
    while (!at_end() && (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '_'))
      n += s_[pos_++];
    return n;
  }

  std::string dollar() {
    ++pos_;
    if (at_end() || peek() != '{') {
      std::string n = name();
      return n.empty() ? "$" : lookup_(n).value_or("");
    }
    ++pos_;
    if (at_end()) fail("syntax error: missing '}'");
    if (peek() == '{' || peek() == '}' || peek() == ':') fail("syntax error: bad substitution");
    std::string n = name();
    if (at_end()) fail("syntax error: missing '}'");
    char op = s_[pos_++];
    if (op == '}') return lookup_(n).value_or("");
    bool colon = op == ':';
    if (colon) {
      if (at_end()) fail("syntax error: missing '}'");
      op = s_[pos_++];
    }
    if (op != '-' && op != '+' && op != '?')
      fail(std::string("unsupported modifier (") + op + ") in substitution");
    std::string word = until('}');
    if (!stopped_) fail("syntax error: missing '}'");
    return modified(n, op, colon, word);
  }

  // ${V:-w} w if V is unset or empty; ${V-w} if unset. ${V:+w} w if V is set and non-empty;
  // ${V+w} if set. ${V:?m} fails if unset or empty; ${V?m} if unset.
  std::string modified(const std::string& n, char op, bool colon, const std::string& word) const {
    auto value = lookup_(n);
    bool present = value && !(colon && value->empty());
    switch (op) {
      case '-':
        return present ? *value : word;
      case '+':
        return present ? word : "";
      default:
        if (!present)
          fail(n + ": " +
               (word.empty() ? (value ? "is not allowed to be empty" : "is not allowed to be unset")
                             : word));
        return *value;
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
  bool stopped_ = false;
  const VariableLookup& lookup_;
  char escape_;
  const std::string& where_;
  QuoteRules rules_;
};

constexpr std::array<std::string_view, 10> kProxyArgs = {
    "HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "FTP_PROXY",
    "ftp_proxy",  "NO_PROXY",   "no_proxy",    "ALL_PROXY",   "all_proxy"};

std::string host_arch() {
#if defined(__aarch64__)
  return "arm64";
#elif defined(__riscv) && __riscv_xlen == 64
  return "riscv64";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return "ppc64le";
#elif defined(__s390x__)
  return "s390x";
#else
  return "amd64";
#endif
}

}  // namespace

std::string expand_variables(std::string_view word, const VariableLookup& lookup, char escape,
                             const std::string& where) {
  return WordExpander(word, lookup, escape, where, QuoteRules::kWord).run();
}

std::string expand_heredoc(std::string_view content, const VariableLookup& lookup, char escape,
                           const std::string& where) {
  return WordExpander(content, lookup, escape, where, QuoteRules::kHeredoc).run();
}

std::optional<std::string> resolve_arg(const KeyValue& arg, const BuildArgs& build_args,
                                       const std::map<std::string, std::string>& global_scope,
                                       const VariableLookup& lookup, char escape,
                                       const std::string& where) {
  if (auto it = build_args.find(arg.key); it != build_args.end()) return it->second;
  if (arg.value) return expand_variables(*arg.value, lookup, escape, where);
  if (auto it = global_scope.find(arg.key); it != global_scope.end()) return it->second;
  return std::nullopt;
}

std::map<std::string, std::string> platform_args() {
  const std::string arch = host_arch();
  return {{"TARGETPLATFORM", "linux/" + arch},
          {"TARGETOS", "linux"},
          {"TARGETARCH", arch},
          {"TARGETVARIANT", ""},
          {"BUILDPLATFORM", "linux/" + arch},
          {"BUILDOS", "linux"},
          {"BUILDARCH", arch},
          {"BUILDVARIANT", ""}};
}

bool is_proxy_arg(std::string_view name) {
  for (auto p : kProxyArgs)
    if (p == name) return true;
  return false;
}

std::vector<std::string> proxy_env(const BuildArgs& build_args) {
  std::vector<std::string> env;
  for (const auto& [key, value] : build_args)
    if (is_proxy_arg(key)) env.push_back(key + "=" + value);
  return env;
}

}  // namespace sandcell::rootfs_builder
