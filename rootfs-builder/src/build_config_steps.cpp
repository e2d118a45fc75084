// The instructions that only change the image config (no layer).
#include <filesystem>

#include "build_steps.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/number.hpp"

namespace sandcell::rootfs_builder {
namespace {

std::vector<std::string> command_of(const ImageState& state, const Instruction& ins) {
  if (ins.json_form) return ins.args;
  std::vector<std::string> command = state.config.config.shell;
  if (command.empty()) command = {"/bin/sh", "-c"};
  command.push_back(ins.args.empty() ? "" : ins.args[0]);
  return command;
}

int64_t duration_ns(const std::string& text, const std::string& where) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    throw Error::invalid(where + ": bad duration '" + text + "'");
  }
  std::string unit = text.substr(used);
  double scale = unit == "ms" ? 1e6 : unit == "s" ? 1e9 : unit == "m" ? 60e9 : unit == "h" ? 3600e9 : 0;
  if (scale == 0) throw Error::invalid(where + ": bad duration '" + text + "' (use ms, s, m or h)");
  // Converting a double outside int64's range (or NaN, which stod accepts) is undefined.
  if (!(value >= 0 && value * scale < 9e18)) throw Error::invalid(where + ": duration '" + text + "' out of range");
  return static_cast<int64_t>(value * scale);
}

void apply_healthcheck(ImageState& state, const Instruction& ins, const std::string& where) {
  Healthcheck check;
  if (!ins.args.empty() && ins.args[0] == "NONE") {
    check.test = {"NONE"};
  } else {
    std::vector<std::string> rest(ins.args.begin() + 1, ins.args.end());
    check.test = ins.json_form ? rest : std::vector<std::string>{"CMD-SHELL", rest.empty() ? "" : rest[0]};
    if (ins.json_form) check.test.insert(check.test.begin(), "CMD");
  }
  auto flag = [&](const char* name) { auto it = ins.flags.find(name); return it == ins.flags.end() ? "" : it->second; };
  if (!flag("interval").empty()) check.interval_ns = duration_ns(flag("interval"), where);
  if (!flag("timeout").empty()) check.timeout_ns = duration_ns(flag("timeout"), where);
  if (!flag("start-period").empty()) check.start_period_ns = duration_ns(flag("start-period"), where);
  if (std::string retries = flag("retries"); !retries.empty()) {
    auto n = parse_number<int>(retries);
    if (!n || *n < 0) throw Error::invalid(where + ": --retries must be a whole number, got '" + retries + "'");
    check.retries = *n;
  }
  state.config.config.healthcheck = check;
}

std::string absolute_workdir(const ImageState& state, const std::string& path) {
  std::filesystem::path base = state.config.config.working_dir.empty() ? "/" : state.config.config.working_dir;
  return (base / path).lexically_normal().string();
}

void apply_key_values(const BuildContext& ctx, ImageState& state, const StageScope& scope,
                      const Instruction& ins, const std::string& where, bool env) {
  for (const KeyValue& kv : ins.key_values) {
    std::string key = expand(ctx, state, scope, kv.key, where);
    std::string value = expand(ctx, state, scope, kv.value.value_or(""), where);
    if (env) set_env(state.config, key, value);
    else state.config.config.labels[key] = value;
  }
}

void apply_arg(const BuildContext& ctx, const ImageState& state, StageScope& scope,
               const Instruction& ins, const std::string& where) {
  for (const KeyValue& kv : ins.key_values) {
    auto value = resolve_arg(kv, ctx.options.build_args, ctx.dockerfile.global_scope, stage_lookup(state, scope),
                             ctx.dockerfile.escape, where);
    if (value) scope.args[kv.key] = *value;
    else scope.args.erase(kv.key);
  }
}

}  // namespace

VariableLookup stage_lookup(const ImageState& state, const StageScope& scope) {
  return [env = env_map(state.config.config.env), args = scope.args](const std::string& name) -> std::optional<std::string> {
    if (auto it = env.find(name); it != env.end()) return it->second;
    if (auto it = args.find(name); it != args.end()) return it->second;
    return std::nullopt;
  };
}

std::string expand(const BuildContext& ctx, const ImageState& state, const StageScope& scope,
                   const std::string& word, const std::string& where) {
  return expand_variables(word, stage_lookup(state, scope), ctx.dockerfile.escape, where);
}

bool apply_config_step(ImageState& state, StageScope& scope, const BuildContext& ctx,
                       const Instruction& ins, const std::string& where) {
  ContainerConfig& c = state.config.config;
  const std::string& k = ins.keyword;
  auto first = [&] { return expand(ctx, state, scope, ins.args.empty() ? "" : ins.args[0], where); };
  if (k == "ENV" || k == "LABEL") apply_key_values(ctx, state, scope, ins, where, k == "ENV");
  else if (k == "ARG") apply_arg(ctx, state, scope, ins, where);
  else if (k == "WORKDIR") c.working_dir = absolute_workdir(state, first());
  else if (k == "USER") c.user = first();
  else if (k == "STOPSIGNAL") c.stop_signal = first();
  else if (k == "MAINTAINER") state.config.author = ins.args.empty() ? "" : ins.args[0];
  else if (k == "ONBUILD") c.on_build.push_back(ins.args.empty() ? "" : ins.args[0]);
  else if (k == "CMD") {
    c.cmd = command_of(state, ins);
    scope.cmd_set = true;
  }
  else if (k == "SHELL") c.shell = ins.args;
  else if (k == "HEALTHCHECK") apply_healthcheck(state, ins, where);
  else if (k == "ENTRYPOINT") {
    c.entrypoint = command_of(state, ins);
    if (!scope.cmd_set) c.cmd.reset();  // Docker: ENTRYPOINT drops a CMD inherited from the base
  } else if (k == "EXPOSE") {
    for (const auto& word : ins.args) {
      std::string port = expand(ctx, state, scope, word, where);
      c.exposed_ports.insert(port.find('/') == std::string::npos ? port + "/tcp" : port);
    }
  } else if (k == "VOLUME") {
    for (const auto& word : ins.args) c.volumes.insert(expand(ctx, state, scope, word, where));
  } else {
    return false;
  }
  return true;
}

}  // namespace sandcell::rootfs_builder
