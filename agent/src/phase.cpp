#include "phase.hpp"

#include <algorithm>

#include "sandcell/base/error.hpp"
#include "sandcell/base/rootless.hpp"
#include "sandcell/rootfs_builder/image_spec.hpp"

namespace sandcell::agent {
namespace {

runtime::Spec phase_spec(const PhaseContext& ctx) {
  runtime::Spec spec = runtime::default_spec();
  apply_limit_args(merge(ctx.skill.limits, ctx.request.limits), spec.limits);
  clamp_to_ceilings(ctx.runner.ceilings, spec.limits);  // the request was checked: the skill's defaults
  // /tmp and the rest of the root are the tmpfs upper, charged to the memory limit: at half of it,
  // a program filling /tmp gets ENOSPC where it would have been OOM-killed.
  if (spec.limits.memory_bytes)
    spec.rootfs_upper_bytes = std::min(spec.rootfs_upper_bytes, *spec.limits.memory_bytes / 2);
  spec.limits.disk_bytes.reset();  // the workspace's, recorded by record_disk
  NetworkArgs net = ctx.runner.network;
  net.net = clamp_net(ctx.runner.ceilings, ctx.request.net.value_or(ctx.skill.network));
  apply_network_args(net, spec);
  spec.seccomp = ctx.seccomp;
  spec.user_namespace = ctx.user_namespace;
  // Idmapped: what the sandbox's root writes is host uid 0's, as without a user namespace, so
  // sandcell reads it back and the next phase or call (another id range) finds it its own.
  spec.bind_mounts.push_back({.source = ctx.workspace_dir,
                              .destination = "/workspace",
                              .read_only = false,
                              .idmap = true,
                              .late = static_cast<bool>(ctx.before_binds)});
  return spec;
}

void set_env(runtime::Spec& spec, const std::vector<std::string>& env) {
  for (const std::string& kv : env) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) throw Error::invalid("env expects K=V, got '" + kv + "'");
  }
  runtime::merge_env(spec.env, env);
}

}  // namespace

PhaseResult run_phase(const PhaseContext& ctx, const std::string& name, const std::vector<std::string>& argv,
                      int stdin_fd, bool stream, const PooledPhase* pooled) {
  runtime::Spec spec = phase_spec(ctx);
  rootfs_builder::ImageRunRequest image_request{.command = argv, .user = std::nullopt, .workdir = std::string("/workspace")};
  rootfs_builder::apply_resolved_image(ctx.store, ctx.skill.image(), ctx.image, image_request,
                                       spec);
  runtime::merge_env(spec.env, skill_env(ctx.skill, spec.limits.cpus));
  set_env(spec, ctx.request.env);
  PhaseResult phase{.name = name};
  runtime::RunOptions options;
  options.stdin_fd = stdin_fd;
  options.state_root = ctx.runner.state_root;
  options.before_binds = ctx.before_binds;
  bool handed_over = false;  // both on the supervisor's thread
  runtime::HandOver hand_over;
  if (pooled) {
    hand_over = pooled->hand_over;
    hand_over.go = [&] {
      handed_over = true;
      pooled->hand_over.go();
    };
    options.hand_over = &hand_over;
    options.on_started = pooled->on_started;
    options.nest_under = pooled->nest_under;
    options.outside_program = pooled->outside_program;
  }
  options.output = [&](runtime::Stream s, std::span<const char> data) {
    if (pooled && !handed_over) return pooled->before(s, data);
    (s == runtime::Stream::Stdout ? phase.stdout_text : phase.stderr_text).append(data.data(), data.size());
    if (stream && ctx.runner.on_output) ctx.runner.on_output(s, data);
  };
  auto complete = [&ctx](runtime::Result& r) {
    if (r.status != runtime::Status::RuntimeError)
      runtime::record_disk(r, ctx.disk, ctx.disk_bytes, "/workspace", ctx.disk_unbounded);
    if (ctx.warning) r.warnings.push_back(*ctx.warning);
  };
  if (pooled && pooled->on_result)
    options.on_result = [&](const runtime::Result& r) {  // the output is all in `phase` by now
      PhaseResult early = phase;
      early.result = r;
      complete(early.result);
      pooled->on_result(early);
    };
  phase.result = runtime::run_sandbox(spec, options);
  complete(phase.result);
  return phase;
}

rootfs_builder::ImageRecord built_image(rootfs_builder::ImageStore& store, const Skill& skill) {
  try {
    return store.resolve(skill.image());
  } catch (const Error& e) {
    if (!e.not_found())  // built, but broken: its own message says how
      throw Error::invalid("skill '" + skill.name + "' image " + skill.image() + ": " + e.what());
    throw Error::invalid("skill '" + skill.name + "' is not built: run `sandcell skills build " +
                         skill.name + "`");
  }
}

UsernsChoice choose_user_namespace(const RunnerContext& runner) {
  using runtime::UserNamespace;
  if (runner.user_namespace) return {*runner.user_namespace, std::nullopt};
  if (runtime::rootless()) return {UserNamespace::Host, std::nullopt};
  std::optional<runtime::UsernsRefusal> refusal = runtime::user_namespace_refusal();
  if (!refusal) return {UserNamespace::Auto, std::nullopt};
  return {UserNamespace::Host,
          "userns: host, not auto: " + refusal->message() +
              ". Without a user namespace of its own the sandbox's root is the host's root, confined by the "
              "dropped capabilities, seccomp and the LSM"};
}

std::vector<std::string> install_command(const Skill& skill, const std::vector<std::string>& packages) {
  std::vector<std::string> argv;
  bool expanded = false;
  for (const std::string& word : skill.install) {
    if (word == "{packages}") {
      argv.insert(argv.end(), packages.begin(), packages.end());
      expanded = true;
    } else {
      argv.push_back(word);
    }
  }
  if (!expanded) argv.insert(argv.end(), packages.begin(), packages.end());
  return argv;
}

}  // namespace sandcell::agent
