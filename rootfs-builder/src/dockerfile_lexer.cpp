// Dockerfile lexing as BuildKit's parser does it: parser directives at the top, logical lines
// (continuations, comments inside them, empty continuation lines), and heredoc bodies.
#include "dockerfile_lexer.hpp"

#include <cctype>
#include <optional>

#include "sandcell/base/error.hpp"
#include "sandcell/base/number.hpp"

namespace sandcell::rootfs_builder {
namespace {

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r';
}

std::string_view trim_left(std::string_view s) {
  while (!s.empty() && (is_blank(s.front()) || s.front() == '\n')) s.remove_prefix(1);
  return s;
}

std::string_view trim_right(std::string_view s) {
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s;
}

std::string where(const std::string& filename, int line) {
  return filename + ":" + std::to_string(line);
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    auto nl = text.find('\n');
    lines.push_back(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  if (!lines.empty() && lines[0].starts_with("\xEF\xBB\xBF")) lines[0].remove_prefix(3);
  for (auto& l : lines)
    if (l.ends_with('\r')) l.remove_suffix(1);
  return lines;
}

// `# name = value` at the top of the file, before any instruction, comment or blank line.
class Directives {
 public:
  void see(std::string_view line, const std::string& at) {
    if (done_) return;
    auto d = parse(line);
    if (!d) {
      done_ = true;
      return;
    }
    auto& [key, value] = *d;
    if (key != "escape" && key != "syntax" && key != "check") {
      done_ = true;  // an unknown directive is a comment, and ends the directives
      return;
    }
    if (seen_.find("," + key + ",") != std::string::npos)
      throw Error::invalid(at + ": only one " + key + " parser directive can be used");
    seen_ += "," + key + ",";
    if (key == "escape") set_escape(value, at);
  }
  char escape() const { return escape_; }

 private:
  static std::optional<std::pair<std::string, std::string>> parse(std::string_view line) {
    if (line.empty() || line[0] != '#') return std::nullopt;
    auto rest = trim_left(line.substr(1));
    std::string key;
    while (!rest.empty() && std::isalnum(static_cast<unsigned char>(rest[0]))) {
      key += static_cast<char>(std::tolower(static_cast<unsigned char>(rest[0])));
      rest.remove_prefix(1);
    }
    if (key.empty() || !std::isalpha(static_cast<unsigned char>(key[0]))) return std::nullopt;
    rest = trim_left(rest);
    if (rest.empty() || rest[0] != '=') return std::nullopt;
    auto value = trim_right(trim_left(rest.substr(1)));
    if (value.empty()) return std::nullopt;
    return std::pair{key, std::string(value)};
  }
  void set_escape(const std::string& value, const std::string& at) {
    if (value != "\\" && value != "`")
      throw Error::invalid(at + ": invalid escape token '" + value + "' does not match ` or \\");
    escape_ = value[0];
  }

  bool done_ = false;
  std::string seen_;
  char escape_ = '\\';
};

bool is_comment(std::string_view line) {
  auto t = trim_left(line);
  return !t.empty() && t[0] == '#';
}

// The escape character as the last non-blank character continues the line, unless it is itself
// escaped (BuildKit: `([^\\])\\[ \t]*$|^\\[ \t]*$`). Returns whether the line continues.
bool strip_continuation(std::string& line, char escape) {
  std::string_view t = line;
  while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
  if (t.empty() || t.back() != escape) return false;
  if (t.size() >= 2 && t[t.size() - 2] == escape) return false;
  line.resize(t.size() - 1);
  return true;
}

std::string strip_leading_tabs(std::string_view s) {
  std::string out;
  bool line_start = true;
  for (char c : s) {
    if (line_start && c == '\t') continue;
    line_start = c == '\n';
    out += c;
  }
  return out;
}

// One word of the instruction line as a heredoc marker: `^(\d*)<<(-?)([^<]*)$`.
std::optional<Heredoc> heredoc_marker(const std::string& word) {
  size_t i = 0;
  while (i < word.size() && std::isdigit(static_cast<unsigned char>(word[i]))) ++i;
  if (word.compare(i, 2, "<<") != 0) return std::nullopt;
  auto fd = i > 0 ? parse_number<int>(std::string_view(word).substr(0, i)) : std::optional<int>(0);
  if (!fd) return std::nullopt;  // not a file descriptor number: a plain word
  Heredoc h{.word = word, .fd = *fd};
  i += 2;
  if (i < word.size() && word[i] == '-') {
    h.chomp = true;
    ++i;
  }
  auto rest = std::string_view(word).substr(i);
  if (rest.empty() || rest.find('<') != std::string_view::npos) return std::nullopt;
  bool escaped = false;
  for (char c : rest) {
    if (!escaped && c == '\\') {
      escaped = true;
      continue;
    }
    if (!escaped && (c == '"' || c == '\'')) {
      h.expand = false;
      continue;
    }
    escaped = false;
    h.name += c;
  }
  return h;
}

class LineReader {
 public:
  LineReader(std::string_view text, const std::string& filename)
      : lines_(split_lines(text)), filename_(filename) {}

  bool at_end() const { return next_ >= lines_.size(); }
  std::string_view take() { return lines_[next_++]; }
  int line_number() const { return static_cast<int>(next_); }  // of the line last taken
  std::string at(int line) const { return where(filename_, line); }

 private:
  std::vector<std::string_view> lines_;
  size_t next_ = 0;
  const std::string& filename_;
};

// Continuation lines: comment lines and blank lines inside are skipped (Docker warns on the
// latter); leading blanks of a continuation line are kept, as Docker does.
void join_continuations(LineReader& in, std::string& line, char escape) {
  bool continues = strip_continuation(line, escape);
  while (continues && !in.at_end()) {
    std::string_view next = in.take();
    if (is_comment(next) || trim_left(next).empty()) continue;
    std::string part(next);
    continues = strip_continuation(part, escape);
    line += part;
  }
}

void read_heredoc_bodies(LineReader& in, LogicalLine& logical) {
  for (const auto& word : split_raw_words(logical.text, '\\')) {
    auto h = heredoc_marker(word);
    if (!h) continue;
    if (h->name.empty()) throw Error::invalid(in.at(logical.line) + ": no delimiter for heredoc");
    // COPY and ADD use the name as the file's name at the destination: one component only.
    if (h->name == "." || h->name == ".." || h->name.find('/') != std::string::npos ||
        h->name.find('\0') != std::string::npos)
      throw Error::invalid(in.at(logical.line) + ": heredoc name '" + h->name + "' must be a file name (no '/', '.' or '..')");
    bool terminated = false;
    while (!in.at_end() && !terminated) {
      std::string_view body_line = in.take();
      std::string_view candidate = body_line;
      if (h->chomp)
        candidate = candidate.substr(std::min(candidate.find_first_not_of('\t'), candidate.size()));
      terminated = candidate == h->name;
      if (!terminated) h->content.append(body_line).append("\n");
    }
    if (!terminated)
      throw Error::invalid(in.at(logical.line) + ": unterminated heredoc " + h->name);
    if (h->chomp) h->content = strip_leading_tabs(h->content);
    logical.heredocs.push_back(std::move(*h));
  }
}

}  // namespace

LexedDockerfile lex_dockerfile(std::string_view text, const std::string& filename,
                               const std::function<bool(std::string_view)>& takes_heredocs) {
  LexedDockerfile out;
  Directives directives;
  LineReader in(text, filename);
  while (!in.at_end()) {
    std::string_view raw = trim_left(in.take());
    directives.see(raw, in.at(in.line_number()));
    out.escape = directives.escape();
    if (raw.empty() || raw[0] == '#') continue;
    LogicalLine logical{.text = std::string(raw), .line = in.line_number()};
    join_continuations(in, logical.text, out.escape);
    if (trim_left(logical.text).empty()) continue;
    if (takes_heredocs(logical.text)) read_heredoc_bodies(in, logical);
    logical.end_line = in.line_number();
    out.lines.push_back(std::move(logical));
  }
  return out;
}

std::vector<std::string> split_raw_words(std::string_view text, char escape) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (!quote && (is_blank(c) || c == '\n')) {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == escape && quote != '\'') {
      if (i + 1 == text.size()) continue;  // a trailing escape is dropped
      word += c;
      c = text[++i];
    } else if (!quote && (c == '"' || c == '\'')) {
      quote = c;
    } else if (quote && c == quote) {
      quote = 0;
    }
    word += c;
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

std::vector<std::string> split_blanks(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  for (char c : text) {
    if (is_blank(c) || c == '\n') {
      if (!word.empty()) words.push_back(std::move(word));
      word.clear();
    } else {
      word += c;
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

}  // namespace sandcell::rootfs_builder
