#pragma once
// The warm pool's flags of the long-running servers (`serve`, `mcp`): docs/architecture.md,
// "The warm pool". Without --pool every request runs cold, as before.
#include <CLI/CLI.hpp>
#include <iostream>
#include <string>

#include "sandcell/agent/skill.hpp"
#include "sandcell/agent/zygote.hpp"
#include "sandcell/agent_service/executor.hpp"
#include "sandcell/apparmor/lsm_probe.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/rootless.hpp"
#include "sandcell/runtime/spec.hpp"

namespace sandcell::cli {

struct PoolFlags {
  std::string sizes;
  std::string memory = "1g";
  unsigned idle_seconds = 600;
  bool zygote = false;
};

inline void add_pool_flags(CLI::App* cmd, PoolFlags& f) {
  cmd->add_option("--pool", f.sizes,
                  "Keep prepared sandboxes per skill, each for one request: python=4[,node=1] [none: every run cold]");
  cmd->add_option("--pool-memory", f.memory, "The prepared sandboxes' memory together at most this (k/m/g)")
      ->capture_default_str();
  cmd->add_option("--pool-idle", f.idle_seconds, "Replace a prepared sandbox after this many seconds unused")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_flag(
      "--pool-zygote", f.zygote,
      "Fork the prepared sandboxes' interpreters from one per skill that has imported the preloads "
      "(skills with a zygote: python), instead of starting one per sandbox");
}

// Throws Error::invalid for a bad --pool or --pool-memory, or a skill that cannot be pooled.
inline agent_service::PoolOptions pool_options(const PoolFlags& f) {
  agent_service::PoolOptions options;
  if (f.sizes.empty()) return options;
  options.sizes = agent_service::parse_pool_sizes(f.sizes);
  const agent::SkillCatalog catalog(agent::resolve_skills_dir(""));  // the members' own
  for (const auto& [name, count] : options.sizes) {
    const agent::Skill& skill = catalog.find(name);
    if (skill.name != name) throw Error::invalid("--pool " + name + ": name the skill, '" + skill.name + "'");
    agent::pool_command(skill);  // no pool_run, or a compile phase
    if (f.zygote && agent::skill_has_zygote(skill)) options.zygotes.insert(name);
  }
  if (!options.zygotes.empty()) {
    // A zygote's sandbox needs a user namespace of its own (root), and its forks cannot take an
    // AppArmor profile yet (libsandcell-confine.so has no AppArmor step): there, none.
    const char* why =
        runtime::rootless() ? "it needs root (a user namespace per sandbox)"
        : apparmor::probe_lsm().apparmor
            ? "this host confines sandboxes with AppArmor, which a zygote's forks cannot take yet"
            : nullptr;
    if (why != nullptr) {
      std::cerr << "sandcell: warning: --pool-zygote: not here, " << why
                << "; the prepared sandboxes start their own interpreters\n";
      options.zygotes.clear();
    }
  }
  options.memory_bytes = runtime::parse_size(f.memory, "--pool-memory");
  options.idle = std::chrono::seconds(f.idle_seconds);
  return options;
}

}  // namespace sandcell::cli
