#pragma once
// A skill: one language environment, as a folder agent/skills/<name>/ holding a Dockerfile (the
// image) and skill.json (how to write, compile, run and install for it). Adding a language is
// adding a folder; agent/skills/README.md documents every field.
#include <optional>
#include <string>
#include <vector>

#include "sandcell/agent/limit_args.hpp"

namespace sandcell::agent {

struct Skill {
  std::string name{};
  std::string description{};
  std::vector<std::string> aliases{};  // language names that resolve to this skill ("py", "c++")
  std::string source_file{};            // written under /workspace, e.g. "main.py"
  std::vector<std::string> compile{};   // empty: nothing to compile
  std::vector<std::string> run{};
  std::vector<std::string> session_run{};  // run for calls in a session; empty: `run`
  std::vector<std::string> install{};   // package installer; "{packages}" expands to the names
  LimitArgs limits{};                   // defaults; the caller's flags win
  std::string network = "none";       // default policy, as `--net`
  std::string artifacts = "/workspace/out";
  std::string errors = "generic";     // error classifier: python, node, bash, gcc, generic
  std::string dir{};                    // the recipe folder
  // The warm pool (docs/architecture.md, "The warm pool"): the command of a prepared sandbox,
  // which imports `preload` and waits on its stdin for the code; empty: the skill is not pooled.
  // "{script}" expands to the text of the skill folder's file `pool_script`, "{script_path}" to
  // where the member puts that file in the workspace for the interpreter to load (it is removed
  // once the interpreter is ready, before any request), "{preload}" to the module names.
  std::vector<std::string> pool_run{};
  std::string pool_script{};
  std::vector<std::string> preload{};
  // The skill's zygote (sandcell/agent/zygote.hpp): pool_run's placeholders, and "{library}" for
  // where the zygote finds libsandcell-confine.so; empty: the pool starts each member's
  // interpreter itself.
  std::vector<std::string> zygote_run{};
  // NAME=VALUE set in every phase over the image's (the request's own env wins); "{cpus}" in a
  // value is the run's CPU limit rounded up, and an entry with it is left out without one.
  std::vector<std::string> env{};

  // The image `sandcell skills build` makes from the recipe.
  std::string image() const { return "sandcell/skill-" + name + ":latest"; }
};

// skill.env with "{cpus}" expanded for a run limited to `cpus` cores.
std::vector<std::string> skill_env(const Skill& skill, std::optional<double> cpus);

// skill.pool_run with its placeholders expanded; throws Error::invalid when the skill has none.
std::vector<std::string> pool_command(const Skill& skill);
// skill.zygote_run expanded, "{library}" to `library`; throws Error::invalid when the skill has
// none or cannot be pooled.
std::vector<std::string> zygote_command(const Skill& skill, const std::string& library);
// The skill folder's pool_script; throws Error::invalid when it cannot be read.
std::string pool_script_text(const Skill& skill);
// Whether pool_run loads the script from a file ("{script_path}"), and where in the workspace
// that file is (relative to /workspace).
bool pool_script_in_workspace(const Skill& skill);
std::string pool_script_workspace_path(const Skill& skill);

// Reads <dir>/skill.json; throws Error::invalid naming the file and the field that is wrong.
Skill load_skill(const std::string& dir);

// Every skill under one directory, found by name or alias.
class SkillCatalog {
 public:
  explicit SkillCatalog(std::string dir);
  // A catalog for one call that names its skill: when `name_or_alias` is a folder's name, only
  // that folder's skill.json is read (a one-shot `sandcell code` read and checked all of them,
  // ~0.25 ms of its start); otherwise (an alias, an unknown name) every skill, as above. find()
  // answers the same for that name either way.
  static SkillCatalog for_skill(std::string dir, const std::string& name_or_alias);
  const std::string& dir() const { return dir_; }
  const std::vector<Skill>& skills() const { return skills_; }
  // Throws Error::invalid "unknown skill 'x' (known: bash, c, ...)".
  const Skill& find(const std::string& name_or_alias) const;

 private:
  SkillCatalog(std::string dir, Skill only);

  std::string dir_;
  std::vector<Skill> skills_;
};

// --skills-dir, else $SANDCELL_SKILLS, else the source tree's agent/skills (compiled in) when
// it exists, else /usr/share/sandcell/skills.
std::string resolve_skills_dir(const std::string& flag);

}  // namespace sandcell::agent
