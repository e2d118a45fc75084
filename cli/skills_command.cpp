// `sandcell skills list | show NAME | build [NAME...]`: the language environments.
#include <chrono>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "sandcell/agent/skill.hpp"
#include "sandcell/rootfs_builder/build.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::cli {
namespace {

using nlohmann::json;

struct SkillsFlags {
  std::string skills_dir, name;
  std::vector<std::string> names;
  bool json = false, no_cache = false, verbose = false;
};

bool built(const rootfs_builder::ImageStore& store, const agent::Skill& s) {
  try {
    store.resolve(s.image());
    return true;
  } catch (const Error&) {
    return false;
  }
}

json skill_json(const agent::Skill& s, bool is_built) {
  return {{"name", s.name},          {"aliases", s.aliases},       {"description", s.description},
          {"built", is_built},       {"image", s.image()},         {"source_file", s.source_file},
          {"compiled", !s.compile.empty()}, {"packages", !s.install.empty()},
          {"sessions_keep_variables", !s.session_run.empty()},     {"network", s.network},
          {"dir", s.dir}};
}

int list(const SkillsFlags& f, const GlobalOptions& g) {
  agent::SkillCatalog catalog(agent::resolve_skills_dir(f.skills_dir));
  rootfs_builder::ImageStore store(g.store_root());
  if (f.json) {
    json all = json::array();
    for (const auto& s : catalog.skills()) all.push_back(skill_json(s, built(store, s)));
    std::cout << all.dump(2) << std::endl;
    return 0;
  }
  std::cout << std::left << std::setw(10) << "NAME" << std::setw(8) << "BUILT" << std::setw(30) << "ALIASES"
            << "DESCRIPTION\n";
  for (const auto& s : catalog.skills()) {
    std::string aliases;
    for (const auto& a : s.aliases) aliases += (aliases.empty() ? "" : ",") + a;
    std::cout << std::setw(10) << s.name << std::setw(8) << (built(store, s) ? "yes" : "no") << std::setw(30)
              << aliases << s.description << "\n";
  }
  return 0;
}

int show(const SkillsFlags& f, const GlobalOptions& g) {
  agent::SkillCatalog catalog(agent::resolve_skills_dir(f.skills_dir));
  const agent::Skill& s = catalog.find(f.name);
  rootfs_builder::ImageStore store(g.store_root());
  json j = skill_json(s, built(store, s));
  if (f.json) {
    std::cout << j.dump(2) << std::endl;
    return 0;
  }
  for (const auto& [key, value] : j.items()) std::cout << std::left << std::setw(26) << key + ":" << value.dump() << "\n";
  std::cout << "recipe:                   " << s.dir << "/Dockerfile, " << s.dir << "/skill.json\n";
  if (!built(store, s)) std::cout << "build it with:            sandcell skills build " << s.name << "\n";
  return 0;
}

int build(const SkillsFlags& f, const GlobalOptions& g) {
  agent::SkillCatalog catalog(agent::resolve_skills_dir(f.skills_dir));
  std::vector<const agent::Skill*> todo;
  for (const std::string& n : f.names) todo.push_back(&catalog.find(n));
  if (todo.empty())
    for (const auto& s : catalog.skills()) todo.push_back(&s);
  rootfs_builder::ImageStore store(g.store_root());
  for (size_t i = 0; i < todo.size(); ++i) {
    const agent::Skill& s = *todo[i];
    std::cerr << "== [" << i + 1 << "/" << todo.size() << "] skill " << s.name << " → " << s.image() << "\n";
    auto start = std::chrono::steady_clock::now();
    rootfs_builder::BuildOptions options;
    options.context_dir = s.dir;
    options.tag = s.image();
    options.no_cache = f.no_cache;
    options.progress = progress_printer(!f.verbose);
    rootfs_builder::BuildResult r;
    try {
      r = rootfs_builder::build_image(store, options);
    } catch (const Error& e) {
      throw Error::invalid("skill " + s.name + ": " + e.what() +
                           " (the skills build FROM debian:bookworm-slim: `sandcell bootstrap debian:bookworm-slim "
                           "--suite bookworm --variant minbase` makes it)");
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cerr << "built skill " << s.name << " in " << std::fixed << std::setprecision(1) << secs << " s (" << r.steps
              << " steps, " << r.cached_steps << " cached)\n";
  }
  return 0;
}

}  // namespace

void add_skills_command(CLI::App& app, Action& action, const Globals& globals) {
  auto f = std::make_shared<SkillsFlags>();
  auto* cmd = app.add_subcommand("skills", "Language environments (skills): list, show, build their images");
  cmd->require_subcommand(1);
  cmd->add_option("--skills-dir", f->skills_dir, "Skills directory [$SANDCELL_SKILLS, the source tree, /usr/share/sandcell/skills]");
  cmd->footer("Examples:\n  sandcell skills list\n  sandcell skills build python c\n  sandcell skills show py --json\n"
              "A skill is a folder agent/skills/NAME/ with a Dockerfile and skill.json (agent/skills/README.md).");
  auto* ls = cmd->add_subcommand("list", "List skills, their aliases and whether their image is built");
  ls->add_flag("--json", f->json, "JSON: [{name, aliases, built, image, ...}]");
  ls->callback([&action, f, globals] { action = [f, globals] { return list(*f, *globals); }; });
  auto* sh = cmd->add_subcommand("show", "Show one skill");
  sh->add_option("name", f->name, "Skill name or alias")->required();
  sh->add_flag("--json", f->json, "JSON output");
  sh->callback([&action, f, globals] { action = [f, globals] { return show(*f, *globals); }; });
  auto* b = cmd->add_subcommand("build", "Build skill images (all when no NAME), through the build cache");
  b->add_option("names", f->names, "Skills to build [all]");
  b->add_flag("--no-cache", f->no_cache, "Run every step again");
  b->add_flag("-v,--verbose", f->verbose, "Show the RUN steps' output too");
  b->callback([&action, f, globals] { action = [f, globals] { return build(*f, *globals); }; });
}

}  // namespace sandcell::cli
