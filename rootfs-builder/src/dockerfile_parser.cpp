// Dockerfile instructions, their flags and forms, and the stages they make, following BuildKit's
// frontend (parser/line_parsers.go, instructions/parse.go).
#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <set>

#include "dockerfile_lexer.hpp"
#include "sandcell/rootfs_builder/dockerfile.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/number.hpp"
#include "sandcell/base/bounded_json.hpp"

namespace sandcell::rootfs_builder {
namespace {

enum class FlagKind { kString, kBool, kList };

struct InstructionRule {
  std::string_view keyword;
  std::vector<std::pair<std::string_view, FlagKind>> flags;
};

const std::vector<InstructionRule>& instruction_rules() {
  using enum FlagKind;
  static const std::vector<InstructionRule> rules = {
      {"ADD",
       {{"chown", kString},
        {"chmod", kString},
        {"link", kBool},
        {"checksum", kString},
        {"keep-git-dir", kBool},
        {"exclude", kList}}},
      {"ARG", {}},
      {"CMD", {}},
      {"COPY",
       {{"from", kString},
        {"chown", kString},
        {"chmod", kString},
        {"link", kBool},
        {"parents", kBool},
        {"exclude", kList}}},
      {"ENTRYPOINT", {}},
      {"ENV", {}},
      {"EXPOSE", {}},
      {"FROM", {{"platform", kString}}},
      {"HEALTHCHECK",
       {{"interval", kString},
        {"timeout", kString},
        {"start-period", kString},
        {"start-interval", kString},
        {"retries", kString}}},
      {"LABEL", {}},
      {"MAINTAINER", {}},
      {"ONBUILD", {}},
      {"RUN", {{"mount", kList}, {"network", kString}, {"security", kString}}},
      {"SHELL", {}},
      {"STOPSIGNAL", {}},
      {"USER", {}},
      {"VOLUME", {}},
      {"WORKDIR", {}},
  };
  return rules;
}

const InstructionRule* find_rule(std::string_view keyword) {
  for (const auto& r : instruction_rules())
    if (r.keyword == keyword) return &r;
  return nullptr;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_space(char c) {
  return std::isspace(static_cast<unsigned char>(c)) != 0;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// Splits "KEYWORD rest" into the keyword and the trimmed rest.
std::pair<std::string, std::string_view> split_keyword(std::string_view line) {
  line = trim(line);
  size_t end = 0;
  while (end < line.size() && !is_space(line[end])) ++end;
  return {std::string(line.substr(0, end)), trim(line.substr(end))};
}

// The leading `--name[=value]` words (quotes removed, `\` escaping), and the rest of the line.
// BuildKit extractBuilderFlags: a lone `--` ends the flags.
std::pair<std::vector<std::string>, std::string_view> extract_flags(std::string_view rest) {
  std::vector<std::string> flags;
  for (;;) {
    rest = trim(rest);
    if (!rest.starts_with("--")) return {flags, rest};
    std::string word;
    char quote = 0;
    size_t i = 0;
    for (; i < rest.size() && (quote || !is_space(rest[i])); ++i) {
      char c = rest[i];
      if (c == '\\' && i + 1 < rest.size()) {
        word += rest[++i];
      } else if (!quote && (c == '"' || c == '\'')) {
        quote = c;
      } else if (quote && c == quote) {
        quote = 0;
      } else if (c != '\\') {
        word += c;
      }
    }
    rest.remove_prefix(i);
    if (word == "--") return {flags, trim(rest)};
    flags.push_back(word);
  }
}

void apply_flag(Instruction& ins, const InstructionRule& rule, const std::string& word) {
  auto eq = word.find('=');
  std::string name = word.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
  auto it = std::find_if(rule.flags.begin(), rule.flags.end(),
                         [&](const auto& f) { return f.first == name; });
  if (it == rule.flags.end()) throw Error::invalid("unknown flag: --" + name);
  bool has_value = eq != std::string::npos;
  std::string value = has_value ? word.substr(eq + 1) : "";
  switch (it->second) {
    case FlagKind::kBool:
      value = has_value ? lower(value) : "true";
      if (value != "true" && value != "false")
        throw Error::invalid("expecting boolean value for flag --" + name + ", not: " + value);
      break;
    case FlagKind::kList:
      if (!has_value) throw Error::invalid("missing a value on flag: --" + name);
      ins.list_flags[name].push_back(value);
      return;
    case FlagKind::kString:
      if (!has_value) throw Error::invalid("missing a value on flag: --" + name);
      break;
  }
  if (!ins.flags.emplace(name, value).second)
    throw Error::invalid("duplicate flag specified: --" + name);
}

// The exec form: a JSON array of strings. Not JSON at all: nullopt (Docker falls back to the shell
// form). A JSON array holding something else than strings is an error, as in Docker.
std::optional<std::vector<std::string>> json_array(std::string_view rest) {
  if (!rest.starts_with('[')) return std::nullopt;
  auto parsed = parse_bounded_json_or_discarded(rest);
  if (parsed.is_discarded() || !parsed.is_array()) return std::nullopt;
  std::vector<std::string> items;
  for (const auto& item : parsed) {
    if (!item.is_string())
      throw Error::invalid(
          "when using JSON array syntax, arrays must be comprised of strings only");
    items.push_back(item.get<std::string>());
  }
  return items;
}

void json_or_shell(Instruction& ins, std::string_view rest) {
  if (auto items = json_array(rest)) {
    ins.args = std::move(*items);
    ins.json_form = true;
  } else if (!rest.empty()) {
    ins.args = {std::string(rest)};
  }
}

void json_or_words(Instruction& ins, std::string_view rest) {
  if (auto items = json_array(rest)) {
    ins.args = std::move(*items);
    ins.json_form = true;
  } else {
    ins.args = split_blanks(rest);
  }
}

void parse_arg_words(Instruction& ins, std::string_view rest, char escape) {
  ins.args = split_raw_words(rest, escape);
  for (const auto& word : ins.args) {
    auto eq = word.find('=');
    if (eq == 0) throw Error::invalid("ARG names can not be blank");
    if (eq == std::string::npos) {
      ins.key_values.push_back({.key = word, .value = std::nullopt});
    } else {
      ins.key_values.push_back({.key = word.substr(0, eq), .value = word.substr(eq + 1)});
    }
  }
}

void parse_healthcheck(Instruction& ins, std::string_view rest) {
  auto [type, command] = split_keyword(rest);
  type = upper(type);
  if (type.empty()) return;
  if (type == "NONE") {
    if (!command.empty()) throw Error::invalid("HEALTHCHECK NONE takes no arguments");
    if (!ins.flags.empty()) throw Error::invalid("HEALTHCHECK NONE takes no flags");
  } else if (type != "CMD") {
    throw Error::invalid("unknown type \"" + type + "\" in HEALTHCHECK (try CMD)");
  }
  json_or_shell(ins, command);
  if (type == "CMD" && ins.args.empty())
    throw Error::invalid("missing command after HEALTHCHECK CMD");
  ins.args.insert(ins.args.begin(), type);
}

Instruction parse_instruction(std::string_view text, char escape, const std::string& where);

void parse_onbuild(Instruction& ins, std::string_view rest, char escape, const std::string& where) {
  if (rest.empty()) return;
  auto trigger = parse_instruction(rest, escape, where);
  if (trigger.keyword == "ONBUILD")
    throw Error::invalid("chaining ONBUILD via `ONBUILD ONBUILD` isn't allowed");
  if (trigger.keyword == "FROM" || trigger.keyword == "MAINTAINER")
    throw Error::invalid(trigger.keyword + " isn't allowed as an ONBUILD trigger");
  ins.args = {std::string(rest)};
}

void parse_arguments(Instruction& ins, std::string_view rest, char escape,
                     const std::string& where) {
  const auto& k = ins.keyword;
  if (k == "RUN" || k == "CMD" || k == "ENTRYPOINT" || k == "SHELL") {
    json_or_shell(ins, rest);
  } else if (k == "COPY" || k == "ADD" || k == "VOLUME") {
    json_or_words(ins, rest);
  } else if (k == "FROM" || k == "EXPOSE") {
    ins.args = split_blanks(rest);
  } else if (k == "ENV" || k == "LABEL") {
    if (!rest.empty()) ins.key_values = parse_key_values(rest, escape, k, where);
    ins.args = split_raw_words(rest, escape);
  } else if (k == "ARG") {
    parse_arg_words(ins, rest, escape);
  } else if (k == "HEALTHCHECK") {
    parse_healthcheck(ins, rest);
  } else if (k == "ONBUILD") {
    parse_onbuild(ins, rest, escape, where);
  } else if (!rest.empty()) {  // USER WORKDIR STOPSIGNAL MAINTAINER
    ins.args = {std::string(rest)};
  }
}

void check_arity(const Instruction& ins) {
  const auto& k = ins.keyword;
  const size_t n = ins.args.size();
  if ((k == "COPY" || k == "ADD") && n < 2)
    throw Error::invalid(k + " requires at least two arguments, but only " +
                         (n == 0 ? "none was" : "one was") +
                         " provided. Destination could not be determined");
  if ((k == "USER" || k == "WORKDIR" || k == "STOPSIGNAL" || k == "MAINTAINER") && n != 1)
    throw Error::invalid(k + " requires exactly one argument");
  if (k == "SHELL" && !ins.json_form)
    throw Error::invalid("SHELL requires the arguments to be in JSON form");
  bool may_be_empty = k == "CMD" || k == "ENTRYPOINT";
  if (n == 0 && !may_be_empty) throw Error::invalid(k + " requires at least one argument");
  if (k == "FROM" && n != 1 && !(n == 3 && lower(ins.args[1]) == "as"))
    throw Error::invalid("FROM requires either one or three arguments");
}

void check_heredocs(const Instruction& ins) {
  if (ins.heredocs.empty()) return;
  if (ins.keyword == "ONBUILD")
    throw Error::invalid("heredocs in ONBUILD triggers are not supported");
  if ((ins.keyword == "COPY" || ins.keyword == "ADD") &&
      std::any_of(ins.heredocs.begin(), ins.heredocs.end(),
                  [&](const Heredoc& h) { return h.word == ins.args.back(); }))
    throw Error::invalid(ins.keyword + " cannot accept a heredoc as a destination");
}

Instruction parse_instruction(std::string_view text, char escape, const std::string& where) {
  auto [word, rest] = split_keyword(text);
  Instruction ins{.keyword = upper(word), .original = std::string(trim(text))};
  const InstructionRule* rule = find_rule(ins.keyword);
  if (!rule) throw Error::invalid("unknown instruction: " + word);
  auto [flag_words, args_text] = extract_flags(rest);
  for (const auto& f : flag_words) apply_flag(ins, *rule, f);
  parse_arguments(ins, args_text, escape, where);
  check_arity(ins);
  return ins;
}

// A logical line may hold heredocs when it is RUN, COPY or ADD (or an ONBUILD of one) in shell
// form.
bool takes_heredocs(std::string_view text) {
  auto [word, rest] = split_keyword(text);
  std::string keyword = upper(word);
  if (keyword == "ONBUILD") std::tie(word, rest) = split_keyword(rest), keyword = upper(word);
  if (keyword != "RUN" && keyword != "COPY" && keyword != "ADD") return false;
  if (rest.find("<<") == std::string_view::npos) return false;
  try {
    return !json_array(extract_flags(rest).second);
  } catch (const Error&) {
    return false;  // a non-string JSON array: reported when the line is parsed
  }
}

std::string location(const std::string& filename, int line) {
  return filename + ":" + std::to_string(line);
}

void start_stage(Dockerfile& df, Instruction from) {
  Stage stage{.index = static_cast<int>(df.stages.size())};
  if (from.args.size() == 3) {
    stage.name = lower(from.args[2]);
    bool valid =
        std::isalpha(static_cast<unsigned char>(stage.name[0])) &&
        std::all_of(stage.name.begin(), stage.name.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
        });
    if (!valid)
      throw Error::invalid(location(df.filename, from.line) + ": invalid name for build stage: \"" +
                           from.args[2] + "\", name can't start with a number or contain symbols");
    for (const auto& s : df.stages)
      if (s.name == stage.name)
        throw Error::invalid(location(df.filename, from.line) + ": duplicate stage name \"" +
                             stage.name + "\"");
  }
  stage.from = std::move(from);
  df.stages.push_back(std::move(stage));
}

void add_instruction(Dockerfile& df, Instruction ins) {
  if (ins.keyword == "FROM") {
    start_stage(df, std::move(ins));
  } else if (!df.stages.empty()) {
    df.stages.back().instructions.push_back(std::move(ins));
  } else if (ins.keyword == "ARG") {
    df.global_args.push_back(std::move(ins));
  } else {
    throw Error::invalid(location(df.filename, ins.line) + ": no build stage in current context (" +
                         ins.keyword + " before the first FROM)");
  }
}

// Global scope: the predefined platform args, then each ARG before FROM in order, its default
// expanded against what came before, a --build-arg winning.
void resolve_global_scope(Dockerfile& df, const BuildArgs& build_args) {
  df.global_scope = platform_args();
  for (const auto& ins : df.global_args) {
    for (const auto& kv : ins.key_values) {
      VariableLookup lookup = [&](const std::string& n) -> std::optional<std::string> {
        auto it = df.global_scope.find(n);
        return it == df.global_scope.end() ? std::nullopt : std::optional(it->second);
      };
      auto value =
          resolve_arg(kv, build_args, {}, lookup, df.escape, location(df.filename, ins.line));
      if (value) df.global_scope[kv.key] = *value;
    }
  }
}

void resolve_bases(Dockerfile& df) {
  VariableLookup lookup = [&](const std::string& n) -> std::optional<std::string> {
    auto it = df.global_scope.find(n);
    return it == df.global_scope.end() ? std::nullopt : std::optional(it->second);
  };
  for (auto& stage : df.stages) {
    const std::string where = location(df.filename, stage.from.line);
    stage.base = expand_variables(stage.from.args[0], lookup, df.escape, where);
    if (stage.base.empty())
      throw Error::invalid(where + ": base name (" + stage.from.args[0] + ") should not be blank");
    for (const auto& earlier : df.stages) {
      if (earlier.index >= stage.index) break;
      if (!earlier.name.empty() && earlier.name == lower(stage.base))
        stage.base_stage = earlier.index;
    }
  }
}

}  // namespace

std::vector<KeyValue> parse_key_values(std::string_view text, char escape, std::string_view keyword,
                                       const std::string& where) {
  auto words = split_raw_words(text, escape);
  if (words.empty())
    throw Error::invalid(where + ": " + std::string(keyword) + " requires at least one argument");
  if (words[0].find('=') == std::string::npos) {  // legacy `KEY value with blanks`
    text = trim(text);
    size_t end = 0;
    while (end < text.size() && !is_space(text[end])) ++end;
    auto value = trim(text.substr(end));
    if (value.empty())
      throw Error::invalid(where + ": " + std::string(keyword) + " must have two arguments");
    return {{.key = std::string(text.substr(0, end)), .value = std::string(value)}};
  }
  std::vector<KeyValue> pairs;
  for (const auto& word : words) {
    auto eq = word.find('=');
    if (eq == std::string::npos)
      throw Error::invalid(where + ": syntax error - can't find = in \"" + word +
                           "\". Must be of the form: name=value");
    if (eq == 0)
      throw Error::invalid(where + ": " + std::string(keyword) + " names can not be blank");
    pairs.push_back({.key = word.substr(0, eq), .value = word.substr(eq + 1)});
  }
  return pairs;
}

Dockerfile parse_dockerfile(std::string_view text, const std::string& filename,
                            const BuildArgs& build_args) {
  auto lexed = lex_dockerfile(text, filename, takes_heredocs);
  Dockerfile df{.filename = filename, .escape = lexed.escape};
  if (lexed.lines.empty()) throw Error::invalid(filename + ": file with no instructions");
  for (auto& line : lexed.lines) {
    const std::string where = location(filename, line.line);
    Instruction ins;
    try {
      ins = parse_instruction(line.text, lexed.escape, where);
    } catch (const Error& e) {
      std::string message = e.what();
      if (message.starts_with(where + ":")) throw;
      throw Error::invalid(where + ": " + message);
    }
    ins.heredocs = std::move(line.heredocs);
    ins.line = line.line;
    ins.end_line = line.end_line;
    try {
      check_heredocs(ins);
    } catch (const Error& e) {
      throw Error::invalid(where + ": " + e.what());
    }
    add_instruction(df, std::move(ins));
  }
  if (df.stages.empty()) throw Error::invalid(filename + ": no FROM instruction: nothing to build");
  resolve_global_scope(df, build_args);
  resolve_bases(df);
  return df;
}

std::optional<int> Dockerfile::find_stage(std::string_view name_or_index) const {
  const std::string wanted = lower(name_or_index);
  for (const auto& s : stages)
    if (!s.name.empty() && s.name == wanted) return s.index;
  if (wanted.empty() || !std::all_of(wanted.begin(), wanted.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c));
      }))
    return std::nullopt;
  auto index = parse_number<int>(wanted);
  if (!index || *index >= static_cast<int>(stages.size())) return std::nullopt;
  return *index;
}

int Dockerfile::target_stage(std::string_view target) const {
  if (target.empty()) return static_cast<int>(stages.size()) - 1;
  const std::string wanted = lower(target);
  for (const auto& s : stages)
    if (s.name == wanted) return s.index;
  throw Error::invalid("target stage \"" + std::string(target) + "\" could not be found in " +
                       filename);
}

}  // namespace sandcell::rootfs_builder
