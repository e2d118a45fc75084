// skill.json → Skill, and the catalog of every skill folder.
#include "sandcell/agent/skill.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "sandcell/base/bounded_json.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/shipped_data.hpp"

namespace sandcell::agent {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::vector<std::string> kSkillFields = {
    "name",        "description", "aliases", "source_file", "compile",   "run",
    "session_run", "install",     "limits",  "network",     "artifacts", "errors",
    "pool_run",    "pool_script", "preload", "env",         "zygote_run"};

std::string text_field(const json& j, const char* key, const std::string& file, bool required) {
  if (!j.contains(key)) {
    if (required) throw Error::invalid(file + ": missing \"" + key + "\"");
    return {};
  }
  if (!j[key].is_string()) throw Error::invalid(file + ": \"" + key + "\" must be a string");
  return j[key].get<std::string>();
}

std::vector<std::string> words_field(const json& j, const char* key, const std::string& file) {
  if (!j.contains(key) || j[key].is_null()) return {};
  if (!j[key].is_array()) throw Error::invalid(file + ": \"" + key + "\" must be an array of strings");
  std::vector<std::string> words;
  for (const json& w : j[key]) {
    if (!w.is_string()) throw Error::invalid(file + ": \"" + key + "\" must be an array of strings");
    words.push_back(w.get<std::string>());
  }
  return words;
}

// A limit written as 30 or "30" or "512m".
std::optional<std::string> limit_text(const json& limits, const char* key, const std::string& file) {
  if (!limits.contains(key)) return std::nullopt;
  const json& v = limits[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number()) return v.dump();
  throw Error::invalid(file + ": limits." + key + " must be a number or a string like \"512m\"");
}

LimitArgs limits_field(const json& j, const std::string& file) {
  if (!j.contains("limits")) return {};
  const json& l = j["limits"];
  if (!l.is_object()) throw Error::invalid(file + ": \"limits\" must be an object");
  for (const auto& [key, value] : l.items())
    if (key != "memory" && key != "pids" && key != "cpus" && key != "timeout" &&
        key != "cpu_time" && key != "output" && key != "disk")
      throw Error::invalid(file + ": unknown limit \"" + key +
                           "\" (memory, pids, cpus, timeout, cpu_time, output, disk)");
  LimitArgs args{.memory = limit_text(l, "memory", file),
                 .pids = limit_text(l, "pids", file),
                 .cpus = limit_text(l, "cpus", file),
                 .timeout = limit_text(l, "timeout", file),
                 .cpu_time = limit_text(l, "cpu_time", file),
                 .output_limit = limit_text(l, "output", file),
                 .disk = limit_text(l, "disk", file)};
  runtime::Limits checked;
  apply_limit_args(args, checked);  // fails now, naming the file, rather than at the first run
  return args;
}

json read_json_file(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw Error::invalid(file + ": cannot be read");
  try {
    return parse_bounded_json(in);
  } catch (const json::parse_error& e) {
    throw Error::invalid(file + ": not valid JSON: " + e.what());
  }
}

}  // namespace

Skill load_skill(const std::string& dir) {
  std::string file = dir + "/skill.json";
  json j = read_json_file(file);
  if (!j.is_object()) throw Error::invalid(file + ": must be a JSON object");
  for (const auto& [key, value] : j.items())
    if (std::find(kSkillFields.begin(), kSkillFields.end(), key) == kSkillFields.end())
      throw Error::invalid(file + ": unknown field \"" + key + "\"");
  Skill s;
  s.dir = dir;
  s.name = text_field(j, "name", file, true);
  if (s.name != fs::path(dir).filename().string())
    throw Error::invalid(file + ": \"name\" must be the folder's name, '" + fs::path(dir).filename().string() + "'");
  s.description = text_field(j, "description", file, false);
  s.aliases = words_field(j, "aliases", file);
  s.source_file = text_field(j, "source_file", file, true);
  if (s.source_file.find('/') != std::string::npos || s.source_file.rfind(".", 0) == 0)
    throw Error::invalid(file + ": \"source_file\" must be a plain file name like main.py");
  s.compile = words_field(j, "compile", file);
  s.run = words_field(j, "run", file);
  if (s.run.empty()) throw Error::invalid(file + ": \"run\" must name a command");
  s.session_run = words_field(j, "session_run", file);
  s.install = words_field(j, "install", file);
  s.limits = limits_field(j, file);
  if (std::string net = text_field(j, "network", file, false); !net.empty()) s.network = net;
  if (std::string a = text_field(j, "artifacts", file, false); !a.empty()) s.artifacts = a;
  if (std::string e = text_field(j, "errors", file, false); !e.empty()) s.errors = e;
  s.pool_run = words_field(j, "pool_run", file);
  s.pool_script = text_field(j, "pool_script", file, false);
  s.zygote_run = words_field(j, "zygote_run", file);
  if (s.pool_script.find('/') != std::string::npos || s.pool_script.rfind(".", 0) == 0)
    throw Error::invalid(file + ": \"pool_script\" must be a plain file name in the skill's folder");
  s.preload = words_field(j, "preload", file);
  for (const std::string& module : s.preload)
    if (module.empty() || module.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-@/") != std::string::npos)
      throw Error::invalid(file + ": \"preload\" must name modules, got '" + module + "'");
  s.env = words_field(j, "env", file);
  for (const std::string& kv : s.env) {
    const size_t eq = kv.find('=');
    if (eq == 0 || eq == std::string::npos || kv.find_first_of(" \t\n") < eq)
      throw Error::invalid(file + ": \"env\" entries must be NAME=VALUE, got '" + kv + "'");
  }
  if (!fs::exists(dir + "/Dockerfile")) throw Error::invalid(dir + ": has skill.json but no Dockerfile");
  return s;
}

std::vector<std::string> skill_env(const Skill& skill, std::optional<double> cpus) {
  std::vector<std::string> env;
  const std::string placeholder = "{cpus}";
  for (std::string kv : skill.env) {
    if (kv.find(placeholder) != std::string::npos && !cpus) continue;  // the program counts the host's CPUs
    for (size_t at; (at = kv.find(placeholder)) != std::string::npos;)
      kv.replace(at, placeholder.size(), std::to_string(std::max(1LL, static_cast<long long>(std::ceil(*cpus)))));
    env.push_back(std::move(kv));
  }
  return env;
}

std::string pool_script_text(const Skill& skill) {
  const std::string file = skill.dir + "/" + skill.pool_script;
  std::ifstream in(file, std::ios::binary);
  if (skill.pool_script.empty() || !in) throw Error::invalid(file + ": the skill's pool_script cannot be read");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string pool_script_workspace_path(const Skill& skill) { return ".sandcell/" + skill.pool_script; }

bool pool_script_in_workspace(const Skill& skill) {
  return std::find(skill.pool_run.begin(), skill.pool_run.end(), "{script_path}") != skill.pool_run.end();
}

namespace {

std::vector<std::string> expand_pool_words(const Skill& skill,
                                           const std::vector<std::string>& words,
                                           const std::string& library) {
  std::vector<std::string> argv;
  for (const std::string& word : words) {
    if (word == "{library}") {
      argv.push_back(library);
      continue;
    }
    if (word == "{preload}") {
      argv.insert(argv.end(), skill.preload.begin(), skill.preload.end());
    } else if (word == "{script}") {
      argv.push_back(pool_script_text(skill));
    } else if (word == "{script_path}") {
      pool_script_text(skill);  // readable, or the skill cannot be pooled
      argv.push_back("/workspace/" + pool_script_workspace_path(skill));
    } else {
      argv.push_back(word);
    }
  }
  return argv;
}

}  // namespace

std::vector<std::string> pool_command(const Skill& skill) {
  if (skill.pool_run.empty())
    throw Error::invalid("skill '" + skill.name +
                         "' cannot be pooled (skill.json has no \"pool_run\")");
  if (!skill.compile.empty())
    throw Error::invalid("skill '" + skill.name + "' cannot be pooled: it has a compile phase");
  return expand_pool_words(skill, skill.pool_run, "");
}

std::vector<std::string> zygote_command(const Skill& skill, const std::string& library) {
  pool_command(skill);  // a pooled skill, or none
  if (skill.zygote_run.empty())
    throw Error::invalid("skill '" + skill.name +
                         "' has no zygote (skill.json has no \"zygote_run\")");
  return expand_pool_words(skill, skill.zygote_run, library);
}

SkillCatalog::SkillCatalog(std::string dir) : dir_(std::move(dir)) {
  std::error_code ec;
  if (!fs::is_directory(dir_, ec))
    throw Error::invalid("skills directory " + dir_ + " does not exist (--skills-dir or $SANDCELL_SKILLS)");
  for (const auto& entry : fs::directory_iterator(dir_))
    if (entry.is_directory() && fs::exists(entry.path() / "skill.json"))
      skills_.push_back(load_skill(entry.path().string()));
  std::sort(skills_.begin(), skills_.end(), [](const Skill& a, const Skill& b) { return a.name < b.name; });
}

SkillCatalog::SkillCatalog(std::string dir, Skill only) : dir_(std::move(dir)) {
  skills_.push_back(std::move(only));
}

SkillCatalog SkillCatalog::for_skill(std::string dir, const std::string& name_or_alias) {
  std::string key = name_or_alias;
  std::transform(key.begin(), key.end(), key.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  // A folder name only: nothing a request names may lead the path out of the skills directory.
  const bool plain =
      !key.empty() && key[0] != '.' &&
      key.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_.+-") == std::string::npos;
  std::error_code ec;
  if (plain && fs::is_regular_file(dir + "/" + key + "/skill.json", ec)) {
    Skill skill = load_skill(dir + "/" + key);  // its name is the folder's (load_skill checks)
    return SkillCatalog(std::move(dir), std::move(skill));
  }
  return SkillCatalog(std::move(dir));
}

const Skill& SkillCatalog::find(const std::string& name_or_alias) const {
  std::string key = name_or_alias;
  std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const Skill& s : skills_)
    if (s.name == key) return s;
  for (const Skill& s : skills_)
    if (std::find(s.aliases.begin(), s.aliases.end(), key) != s.aliases.end()) return s;
  std::string known;
  for (const Skill& s : skills_) known += (known.empty() ? "" : ", ") + s.name;
  throw Error::invalid("unknown skill '" + name_or_alias + "' (known: " + known + "; see sandcell skills list)");
}

std::string resolve_skills_dir(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = getenv("SANDCELL_SKILLS"); env && *env) return env;
  return runtime::shipped_data_dir("skills", SANDCELL_SOURCE_SKILLS_DIR);
}

}  // namespace sandcell::agent
