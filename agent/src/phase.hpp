#pragma once
// One phase of a code call (install, compile, run): a sandbox of the skill's image with the
// workspace bind-mounted at /workspace.
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "sandcell/agent/code_request.hpp"
#include "sandcell/agent/code_result.hpp"
#include "sandcell/agent/code_runner.hpp"
#include "sandcell/agent/skill.hpp"
#include "sandcell/rootfs_builder/store.hpp"
#include "sandcell/base/workspace_disk.hpp"

namespace sandcell::agent {

// Everything the phases of one call share.
struct PhaseContext {
  const Skill& skill;
  const CodeRequest& request;
  const RunnerContext& runner;
  rootfs_builder::ImageStore& store;
  const rootfs_builder::ImageRecord& image;  // the skill's, resolved once (code_runner.cpp)
  std::string workspace_dir;  // host path
  runtime::SeccompSource seccomp;
  // The workspace's own filesystem (sandcell/base/workspace_disk.hpp); null: unbounded, for `disk_unbounded`.
  const WorkspaceDisk* disk = nullptr;
  uint64_t disk_bytes = 0;  // the bound asked for
  std::string disk_unbounded{};
  runtime::UserNamespace user_namespace = runtime::UserNamespace::Host;  // see choose_user_namespace
  std::optional<std::string> warning;  // added to each phase's record
  // Set: workspace_dir does not exist yet (a scratch disk still being made); each phase's
  // sandbox calls this before it attaches the workspace (RunOptions::before_binds), with a user
  // namespace after its clone, so the sandbox's start overlaps the disk's.
  std::function<void()> before_binds{};
};

struct UsernsChoice {
  runtime::UserNamespace mode;
  std::optional<std::string> warning;
};
// The phases' user namespace: the runner's if set; else Host rootless, Auto as root unless the
// kernel refuses this process a user namespace (then Host, and why, as a warning).
UsernsChoice choose_user_namespace(const RunnerContext& runner);

// The skill's image, resolved once for every phase (under the caller's store lease); throws
// Error::invalid naming the skill when it is not built or broken.
rootfs_builder::ImageRecord built_image(rootfs_builder::ImageStore& store, const Skill& skill);

// A phase in a prepared sandbox of the warm pool (docs/architecture.md, "The warm pool").
struct PooledPhase {
  runtime::HandOver hand_over;
  // Output before the hand-over (the bootstrap's, not the program's); supervisor thread.
  std::function<void(runtime::Stream, std::span<const char>)> before;
  std::function<void(pid_t init, const std::vector<std::string>& cgroup_paths)> on_started;
  // The phase's result before the sandbox's teardown (RunOptions::on_result); supervisor thread.
  std::function<void(const PhaseResult&)> on_result;
  // Set: the program is a fork of the skill's zygote, in a sandbox nested under it
  // (sandcell/agent/zygote.hpp), instead of the pool command started in it.
  const runtime::Nesting* nest_under = nullptr;
  const runtime::OutsideProgram* outside_program = nullptr;
};

// stdin_fd: -1 for /dev/null. `stream`: pass output to runner.on_output as it arrives.
// `pooled`: run it as a prepared sandbox that waits for its hand-over.
PhaseResult run_phase(const PhaseContext& ctx, const std::string& name, const std::vector<std::string>& argv,
                      int stdin_fd, bool stream, const PooledPhase* pooled = nullptr);

// The skill's install template with "{packages}" expanded (or the names appended).
std::vector<std::string> install_command(const Skill& skill, const std::vector<std::string>& packages);

}  // namespace sandcell::agent
